# Installs the SDK to a temporary prefix, builds sdk/examples/sample-only against it with
# find_package(specd), and checks that `specd plugins --json` lists it via SPECD_PLUGIN_PATH.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(example_build ${WORK_DIR}/example)

function(run_checked)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run_checked(${CMAKE_COMMAND} --install ${SPECD_BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/include/specd/acceptance.h OR NOT EXISTS ${prefix}/lib/cmake/specd/specdConfig.cmake)
  message(FATAL_ERROR "install did not produce the SDK headers and CMake package")
endif()
run_checked(${CMAKE_COMMAND} -S ${SPECD_SOURCE_DIR}/sdk/examples/sample-only -B ${example_build}
            -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run_checked(${CMAKE_COMMAND} --build ${example_build})
set(ENV{SPECD_PLUGIN_PATH} ${example_build})
run_checked(${SPECD_CLI} plugins --json)
if(NOT last_output MATCHES "\"id\":\"com.example.accept.sample-only\"")
  message(FATAL_ERROR "specd plugins does not list the out-of-tree plugin:\n${last_output}")
endif()
if(NOT last_output MATCHES "\"label\":\"exact\"")
  message(FATAL_ERROR "the out-of-tree plugin's label is missing:\n${last_output}")
endif()
# Only the entry symbol is exported.
execute_process(COMMAND nm -D --defined-only ${example_build}/specd-accept-sample-only.so
                OUTPUT_VARIABLE symbols)
string(REGEX MATCHALL " [TDBR] [A-Za-z_][A-Za-z0-9_]*" exported "${symbols}")
list(LENGTH exported n_exported)
if(NOT n_exported EQUAL 1 OR NOT symbols MATCHES "specd_plugin_entry")
  message(FATAL_ERROR "the plugin must export only specd_plugin_entry, it exports:\n${symbols}")
endif()
message(STATUS "out-of-tree plugin built and listed")
