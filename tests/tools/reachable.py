"""reachable.py - a copy of the built `reign` that another user (nobody) can run.

Tests that run `reign` as another user (setpriv) cannot use the build tree's binary when the
tree sits in a directory that user cannot enter (a clone in a `mktemp -d`, as CI makes): the
binary and the libreign it loads (found through its RPATH) are copied into a fresh directory
anyone may enter, and LD_LIBRARY_PATH points there.
"""
import os
import shutil
import subprocess
import tempfile


def reachable_copy(cli, prefix="reign-bin-"):
    """A directory anyone may enter, holding copies of the reign binary and of the libreign it
    loads; returns (directory, binary, extra environment)."""
    base = tempfile.mkdtemp(prefix=prefix)
    os.chmod(base, 0o711)
    binary = os.path.join(base, "reign")
    shutil.copy2(cli, binary)
    os.chmod(binary, 0o755)
    ldd = subprocess.run(["ldd", cli], capture_output=True, text=True, check=True).stdout
    for line in ldd.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libreign.so") and len(parts) > 2 and parts[1] == "=>":
            dst = os.path.join(base, parts[0])
            shutil.copy2(os.path.realpath(parts[2]), dst)
            os.chmod(dst, 0o755)
    return base, binary, {"LD_LIBRARY_PATH": base}
