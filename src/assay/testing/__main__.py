"""``python -m assay.testing DELAY PORT``: the scripted OpenAI-compatible server in the foreground (benchmarks)."""

import sys

from assay.testing.servers import serve_forever

serve_forever(float(sys.argv[1]), int(sys.argv[2]))
