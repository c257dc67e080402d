"""pystrobe, installed from its wheel.

The profiler is one native program, which pip put in the environment's
scripts directory (bin/) beside python; this package finds it, so that
`python -m pystrobe` runs the same program as `pystrobe`.
"""
import os
import shutil
import sys
import sysconfig

__version__ = "@VERSION@"


def _scripts_dirs():
    """The scripts directories of the install schemes whose library
    directory holds this package (a venv, --user, the system's), then the
    one beside the running interpreter."""
    lib = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for scheme in sysconfig.get_scheme_names():
        try:
            paths = sysconfig.get_paths(scheme)
        except KeyError:
            continue
        if lib in (os.path.realpath(paths.get(k, "")) for k in ("purelib", "platlib")):
            yield paths["scripts"]
    yield os.path.dirname(sys.executable)


def binary():
    """The path of the pystrobe program that came with this package."""
    for d in _scripts_dirs():
        path = os.path.join(d, "pystrobe")
        if os.access(path, os.X_OK):
            return path
    path = shutil.which("pystrobe")
    if path is None:
        raise FileNotFoundError("pystrobe: the pystrobe program is not where pip installed it; "
                                "reinstall: pip install --force-reinstall pystrobe")
    return path
