# The Debian packages (make package, or cpack -G DEB in the build folder), the install layout
# of cmake/SpecdInstall.cmake under /usr:
#   specd_<version>_<arch>.deb               the CLI, the CPU backend, every strategy, the
#                                            shipped configs and models, the SDK
#   specd-backend-{cuda,hip}_<version>_<arch>.deb   each GPU backend that was built, on its
#                                            own so that specd does not pull in GPU runtimes
# Dependencies come from dpkg-shlibdeps over the installed binaries.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME specd)
set(CPACK_PACKAGE_VENDOR "specd")
set(CPACK_PACKAGE_CONTACT "specd maintainers <specd@invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Speculative decoding: the specd CLI, its backend and strategy plugins, and the plugin SDK")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_COMPONENT_RUNTIME_GROUP main)
set(CPACK_COMPONENT_SDK_GROUP main)
set(CPACK_COMPONENT_CUDA_GROUP cuda)
set(CPACK_COMPONENT_HIP_GROUP hip)
set(CPACK_DEBIAN_MAIN_PACKAGE_NAME specd)
foreach(gpu cuda hip)
  string(TOUPPER ${gpu} _specd_gpu)
  set(CPACK_DEBIAN_${_specd_gpu}_PACKAGE_NAME specd-backend-${gpu})
  set(CPACK_DEBIAN_${_specd_gpu}_PACKAGE_DEPENDS "specd (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_${_specd_gpu}_DESCRIPTION "The ${gpu} backend plugin of specd")
endforeach()
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
# The CUDA backend links cuBLAS from the CUDA toolkit, which no Debian package provides:
# dpkg-shlibdeps is told where it lives and leaves it out of Depends.
if(CUDA_cublas_LIBRARY)
  get_filename_component(_specd_cuda_libdir "${CUDA_cublas_LIBRARY}" DIRECTORY)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_specd_cuda_libdir})
endif()
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
