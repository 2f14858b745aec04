# Compiler cache: when ccache is installed and no launcher was chosen, every compiler call goes
# through it, with paths made relative to the source tree (CCACHE_BASEDIR) so that two
# checkouts of the same commit (a CI clone, a second worktree) share the cached objects, and
# without the build folder in the hash of -g builds (CCACHE_NOHASHDIR: the sanitizer build's
# line tables then name the folder that first compiled an object, which changes no report's
# file and line), so that a fresh clone's sanitizer build is not compiled cold.
# -DSPECD_CCACHE=OFF turns it off.
option(SPECD_CCACHE "Use ccache when it is installed" ON)
find_program(SPECD_CCACHE_PROGRAM ccache)
if(SPECD_CCACHE AND SPECD_CCACHE_PROGRAM)
  foreach(lang C CXX CUDA)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                                          ${SPECD_CCACHE_PROGRAM})
    endif()
  endforeach()
endif()
