# The Debian package (make package, or cpack -G DEB in the build folder): the whole install
# layout of cmake/SpecdInstall.cmake under /usr, one package named specd_<version>_<arch>.deb.
# Its dependencies come from dpkg-shlibdeps over the installed binaries.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME specd)
set(CPACK_PACKAGE_VENDOR "specd")
set(CPACK_PACKAGE_CONTACT "specd maintainers <specd@invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Speculative decoding: the specd CLI, its backend and strategy plugins, and the plugin SDK")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
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
