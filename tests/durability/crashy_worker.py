"""A stand-in worker process for crash tests: executes one run, and is killed by the test."""

import sys

from browserq.execute.runtime import Runtime
from browserq.settings import load_settings

if __name__ == "__main__":
    runtime = Runtime(load_settings()).start()
    runtime.execute(sys.argv[1])
    runtime.stop()
