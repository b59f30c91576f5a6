// The one source of libchiprt.so (target chiprt_shared in src/CMakeLists.txt). A shared library
// needs a source of its own; everything it contains comes from the rooms' static libraries,
// compiled into it as object files, so that every public symbol is exported.
