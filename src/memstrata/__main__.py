"""``python -m memstrata`` is the ``memstrata`` command."""

from memstrata.cli.main import app

app(prog_name="memstrata")
