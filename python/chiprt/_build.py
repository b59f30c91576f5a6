"""Where this chiprt package finds its parts (paths()) and build_chip_object.

build_chip_object compiles orchestration or kernel C++ sources into a chip object the way
chiprt_add_chip_object does in CMake: the public headers on the include path, hidden visibility,
libchiprt_common.a linked in statically. Results are cached under a directory keyed by a hash of
everything that goes into the build, so a second call with the same inputs compiles nothing.
"""

import hashlib
import os
import shlex
import subprocess
import tempfile

from . import _build_config
from ._errors import ArgumentError, BuildError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _resolve(path: str) -> str:
    if _build_config.RELATIVE:
        return os.path.normpath(os.path.join(_PACKAGE_DIR, path))
    return path


def paths() -> dict:
    """include_dir, lib_dir, chip_object_dir (CHIPRT_CHIP_OBJECT_DIR overrides it),
    common_library (libchiprt_common.a), package_dir and cxx_compiler."""
    chip_object_dir = os.environ.get("CHIPRT_CHIP_OBJECT_DIR") or _resolve(_build_config.CHIP_OBJECT_DIR)
    return {
        "include_dir": _resolve(_build_config.INCLUDE_DIR),
        "lib_dir": _resolve(_build_config.LIB_DIR),
        "chip_object_dir": chip_object_dir,
        "common_library": _resolve(_build_config.COMMON_LIBRARY),
        "package_dir": _PACKAGE_DIR,
        "cxx_compiler": _build_config.CXX_COMPILER,
    }


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "chiprt")


def _looks_like_path(source) -> bool:
    if isinstance(source, os.PathLike):
        return True
    return isinstance(source, str) and "\n" not in source and source.endswith(
        (".cpp", ".cc", ".cxx", ".c++", ".C")
    )


def _headers_digest(include_dir: str) -> str:
    digest = hashlib.sha256()
    header_dir = os.path.join(include_dir, "chiprt")
    for name in sorted(os.listdir(header_dir)) if os.path.isdir(header_dir) else []:
        with open(os.path.join(header_dir, name), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def build_chip_object(
    sources,
    name=None,
    include_dirs=(),
    defines=(),
    flags=(),
    cache_dir=None,
    compiler=None,
) -> str:
    """Compiles C++ `sources` (paths, or strings of source text) into a chip object and returns
    the path of the .so (cached by content). Raises chiprt.BuildError with the compiler's output
    when the build fails."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    sources = list(sources)
    if not sources:
        raise BuildError("build_chip_object needs at least one source")
    where = paths()
    include_dir = where["include_dir"]
    common_library = where["common_library"]
    compiler = compiler or os.environ.get("CXX") or _build_config.CXX_COMPILER
    include_dirs = [os.fspath(d) for d in include_dirs]
    defines = [str(d) for d in defines]
    flags = [str(f) for f in flags]
    sanitize_flags = list(getattr(_build_config, "SANITIZE_FLAGS", []))

    # What goes into the build, in order: each source's text, then everything else.
    texts = []
    for source in sources:
        if _looks_like_path(source):
            path = os.fspath(source)
            try:
                with open(path, "rb") as f:
                    texts.append((os.path.basename(path), f.read()))
            except OSError as e:
                raise BuildError(f"cannot read source '{path}': {e}") from None
        else:
            texts.append((None, str(source).encode()))
    digest = hashlib.sha256()
    for label, text in texts:
        digest.update(b"source\0" + text + b"\0")
    settings = [("compiler", compiler), ("includes", include_dirs), ("defines", defines), ("flags", flags),
                ("sanitize", sanitize_flags)]
    for part in settings:
        digest.update(repr(part).encode() + b"\0")
    digest.update(_headers_digest(include_dir).encode())
    digest.update(_build_config.VERSION.encode())
    key = digest.hexdigest()[:24]

    if name is not None:
        name = str(name)
        # A file name inside the cache directory: no separators, no "..", no NUL.
        if (not name or "\0" in name or "/" in name or (os.altsep and os.altsep in name)
                or name in (".", "..")):
            raise ArgumentError(f"build_chip_object: name {name!r} must be a plain file name "
                                "(no path separators, not '.' or '..')")
    stem = name or (os.path.splitext(texts[0][0])[0] if texts[0][0] else "chip_object")
    cache_dir = os.fspath(cache_dir) if cache_dir is not None else _default_cache_dir()
    os.makedirs(cache_dir, exist_ok=True)
    target = os.path.join(cache_dir, f"{stem}-{key}.so")
    if os.path.exists(target):
        return target

    with tempfile.TemporaryDirectory(prefix="chiprt-build-", dir=cache_dir) as work:
        source_paths = []
        for i, (label, text) in enumerate(texts):
            if label is not None:
                source_paths.append(os.path.abspath(os.fspath(sources[i])))
            else:
                path = os.path.join(work, f"source{i}.cpp")
                with open(path, "wb") as f:
                    f.write(text)
                source_paths.append(path)
        output = os.path.join(work, "out.so")
        command = [compiler, "-std=c++20", "-O2", "-fPIC", "-shared", "-fvisibility=hidden"] + sanitize_flags
        command += [f"-I{include_dir}"] + [f"-I{d}" for d in include_dirs]
        command += [f"-D{d}" for d in defines] + flags
        command += source_paths + ["-o", output, common_library, "-l:libxxhash.so.0", "-pthread"]
        try:
            result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace")
        except OSError as e:
            raise BuildError(f"cannot run the compiler '{compiler}': {e}", output=str(e)) from None
        if result.returncode != 0:
            raise BuildError(
                f"compiling {stem} failed (exit {result.returncode}): {shlex.join(command)}\n{result.stdout}",
                output=result.stdout,
            )
        # Atomic: a concurrent build of the same key renames an identical file over it.
        os.replace(output, target)
    return target
