"""``python -m pyrdk``: the ``pyrdk`` command."""
from pyrdk.cli.main import main

if __name__ == "__main__":
    main()
