"""Run a program written for pykafka 2.8, unmodified, on pyrdk:

    python -m tests.compat.run PROGRAM.py [ARGS...]

installs pyrdk as ``pykafka`` (``pyrdk.install_as_pykafka()``) and runs the program as
``__main__`` with its own arguments, as ``python PROGRAM.py ARGS...`` would with pykafka.
"""
import runpy
import sys

import pyrdk


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: python -m tests.compat.run PROGRAM.py [ARGS...]")
    pyrdk.install_as_pykafka()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
