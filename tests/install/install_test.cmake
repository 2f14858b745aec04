# MODE=install: `cmake --install` of the build into a scratch prefix.
# MODE=package: `cpack -G DEB` of the build; specd_*.deb (the GPU backends have their own
# packages) unpacked with dpkg-deb -x (no root needed).
# Either way, the installed bin/specd runs with SPECD_PLUGIN_PATH unset and must find the
# bundled plugins in <prefix>/lib/specd/plugins, list them, and run the shipped default
# configuration from <prefix>/share/specd.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/script_checks.cmake)

if(MODE STREQUAL "install")
  set(prefix ${WORK_DIR}/prefix)
  run_checked(${CMAKE_COMMAND} --install ${SPECD_BUILD_DIR} --prefix ${prefix})
elseif(MODE STREQUAL "package")
  find_program(DPKG_DEB dpkg-deb)
  if(NOT DPKG_DEB)
    message(FATAL_ERROR "dpkg-deb is missing: the Debian package cannot be checked")
  endif()
  run_checked(${CMAKE_COMMAND} -E chdir ${SPECD_BUILD_DIR} cpack -G DEB
              -B ${WORK_DIR}/out --config ${SPECD_BUILD_DIR}/CPackConfig.cmake)
  file(GLOB debs ${WORK_DIR}/out/specd_*.deb)
  list(LENGTH debs n_debs)
  if(NOT n_debs EQUAL 1)
    message(FATAL_ERROR "cpack made ${n_debs} specd_*.deb files in ${WORK_DIR}/out: ${debs}")
  endif()
  run_checked(${DPKG_DEB} --field ${debs} Package Version Depends)
  # The GPU backends are packaged apart (specd-backend-*.deb): specd needs no GPU runtime.
  if(NOT last_output MATCHES "Package: specd" OR NOT last_output MATCHES "libstdc\\+\\+6" OR
     last_output MATCHES "amdhip|cublas|cudart")
    message(FATAL_ERROR "${debs}: unexpected control fields (Depends from dpkg-shlibdeps):\n"
            "${last_output}")
  endif()
  run_checked(${DPKG_DEB} -x ${debs} ${WORK_DIR}/root)
  set(prefix ${WORK_DIR}/root/usr)
else()
  message(FATAL_ERROR "MODE must be install or package, not '${MODE}'")
endif()

set(plugindir ${prefix}/lib/specd/plugins)
foreach(f bin/specd lib/specd/plugins/specd-backend-cpu.so
          lib/specd/plugins/specd-propose-draft-model.so lib/specd/plugins/specd-accept-rejection.so
          include/specd/entry.h include/specd/cpp/plugin.hpp share/specd/configs/default.toml
          share/specd/models/target.gguf share/specd/models/draft.gguf
          share/doc/specd-sdk/README.md share/doc/specd-sdk/CHANGELOG.md
          share/doc/specd-sdk/examples/successor/CMakeLists.txt)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install layout lacks ${prefix}/${f}")
  endif()
endforeach()
file(GLOB_RECURSE cmake_package ${prefix}/lib/*specdConfig.cmake)
if(NOT cmake_package)
  message(FATAL_ERROR "the install layout lacks the CMake package (lib/cmake/specd)")
endif()
# Test plugins stay in the build tree.
file(GLOB test_plugins ${plugindir}/specd-test-*)
if(test_plugins)
  message(FATAL_ERROR "test plugins were installed: ${test_plugins}")
endif()

# The installed CLI, with nothing telling it where plugins are.
set(specd ${CMAKE_COMMAND} -E env --unset=SPECD_PLUGIN_PATH ${prefix}/bin/specd)
run_checked(${specd} plugins --json)
set(listing "${last_output}")
require_listed("${listing}" "the installed specd does not list"
               org.specd.backend.cpu org.specd.propose.draft-model org.specd.accept.rejection)
if(NOT listing MATCHES "\"path\":\"${plugindir}/specd-backend-cpu.so\"")
  message(FATAL_ERROR "the cpu backend was not loaded from ${plugindir}:\n${listing}")
endif()

run_checked(${specd} run -c ${prefix}/share/specd/configs/default.toml -p "def f(x):"
            --max-tokens 4 --json)
if(NOT last_output MATCHES "\"text\"")
  message(FATAL_ERROR "the installed specd run printed no text:\n${last_output}\n${last_error}")
endif()
message(STATUS "${MODE}: ${prefix}/bin/specd lists its plugins and runs the default configuration")
