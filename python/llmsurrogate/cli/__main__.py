"""``python -m llmsurrogate.cli``: the ``llmsurrogate`` command."""

from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
