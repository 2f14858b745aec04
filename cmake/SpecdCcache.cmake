# Compiler cache: when ccache is installed and no launcher was chosen, every compiler call goes
# through it, with paths made relative to the source tree (CCACHE_BASEDIR) so that two
# checkouts of the same commit (a CI clone, a second worktree) share the cached objects.
# -DSPECD_CCACHE=OFF turns it off.
option(SPECD_CCACHE "Use ccache when it is installed" ON)
find_program(SPECD_CCACHE_PROGRAM ccache)
if(SPECD_CCACHE AND SPECD_CCACHE_PROGRAM)
  foreach(lang C CXX CUDA)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
                                          ${SPECD_CCACHE_PROGRAM})
    endif()
  endforeach()
endif()
