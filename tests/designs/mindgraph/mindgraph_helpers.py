"""Test data shared by the MindGraph tests."""

from __future__ import annotations

DOC = (
    "Maya Chen moved to Lisbon in March 2021 to join the Tagus Robotics lab.\n"
    "She led a team of 12 engineers building underwater drones.\n"
    "In 2023 the lab won the Atlantic Prize for its drone Marlin.\n"
    "Her brother Leo stayed in Toronto, where he teaches history.\n"
    "The Marlin drone can dive to 300 meters and costs $45,000.\n"
    "Maya says the hardest part was the cold water testing in Sines.\n"
)
