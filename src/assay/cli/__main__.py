"""``python -m assay.cli``: the same as the ``assay`` command."""

from assay.cli.main import main_process

main_process()
