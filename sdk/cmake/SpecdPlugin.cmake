# specd_add_plugin(<name> <sources>...)
#
# Builds a specd plugin: a MODULE library that links nothing from specd, exports only
# specd_plugin_entry (hidden visibility plus a version script) and refuses undefined
# symbols at link time. Used in tree and by the installed CMake package alike.
#
# specd loads a library it finds in a plugin folder only when its file name follows the
# convention specd-<kind>-<name>.so (kind: backend, propose, verify, accept); a target named
# otherwise is loaded only where its file is named explicitly, so this warns.
function(specd_add_plugin name)
  if(NOT name MATCHES "^specd-(backend|propose|verify|accept)-.+")
    message(AUTHOR_WARNING "specd_add_plugin(${name}): specd loads plugins from a folder only "
            "when they are named specd-<kind>-<name>.so (kind: backend, propose, verify, accept)")
  endif()
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(TARGET specd::sdk)
    target_link_libraries(${name} PRIVATE specd::sdk)
  else()
    target_link_libraries(${name} PRIVATE specd_sdk_headers)
  endif()
  # Refuse undefined symbols, except in clang sanitizer builds: clang leaves a module's
  # __asan_*/__ubsan_* references to the runtime of the executable that loads it (gcc links
  # libasan into the module, so -z defs holds there).
  set(_specd_no_undefined -Wl,-z,defs)
  if(SPECD_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(_specd_no_undefined "")
  endif()
  target_link_options(${name} PRIVATE
    "-Wl,--version-script=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/specd_plugin.map"
    ${_specd_no_undefined})
  if(DEFINED SPECD_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${SPECD_PLUGIN_OUTPUT_DIR})
  endif()
  # When SPECD_PLUGIN_INSTALL_DIR is set (a folder relative to the install prefix), the
  # plugin is also installed there, in the component SPECD_PLUGIN_INSTALL_COMPONENT
  # (default `runtime`).
  if(DEFINED SPECD_PLUGIN_INSTALL_DIR)
    set(_specd_component runtime)
    if(SPECD_PLUGIN_INSTALL_COMPONENT)
      set(_specd_component ${SPECD_PLUGIN_INSTALL_COMPONENT})
    endif()
    install(TARGETS ${name} LIBRARY DESTINATION ${SPECD_PLUGIN_INSTALL_DIR}
            COMPONENT ${_specd_component})
  endif()
endfunction()
