"""`memstrata serve` on a port already in use: the bind error first, exit 2, and no
"serving" line that says otherwise."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


def test_serve_on_a_port_in_use_says_so_and_exits_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "memstrata", "serve", "--db", str(tmp_path / "m.db"),
             "--port", str(port)],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "serving" not in run.stderr
    assert f"127.0.0.1:{port}" in run.stderr and "in use" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
