# The specd release version, read by the top-level project and by the SDK when it is
# configured on its own (make install-sdk), and the ABI version, read from specd/version.h
# (the one place it is defined): the CMake package is versioned by the ABI, so that a plugin
# asks for the ABI minor it needs with find_package(specd 0.<minor>).
set(SPECD_VERSION 0.1.0)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../include/specd/version.h _specd_abi_lines
     REGEX "^#define SPECD_ABI_VERSION_(MAJOR|MINOR) [0-9]+u$")
foreach(_line ${_specd_abi_lines})
  string(REGEX REPLACE "^#define SPECD_ABI_VERSION_([A-Z]+) ([0-9]+)u$" "\\1;\\2" _pair "${_line}")
  list(GET _pair 0 _which)
  list(GET _pair 1 _number)
  set(SPECD_ABI_VERSION_${_which} ${_number})
endforeach()
if(NOT DEFINED SPECD_ABI_VERSION_MAJOR OR NOT DEFINED SPECD_ABI_VERSION_MINOR)
  message(FATAL_ERROR "cannot read the ABI version from specd/version.h")
endif()
set(SPECD_ABI_VERSION ${SPECD_ABI_VERSION_MAJOR}.${SPECD_ABI_VERSION_MINOR})
