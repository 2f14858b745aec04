# The install layout, relative to the prefix (cmake --install build --prefix P, or the Debian
# package with prefix /usr):
#
#   bin/specd                       the CLI (component runtime)
#   lib/specd/plugins/specd-*.so    the bundled backends and strategies (runtime); the
#                                   installed CLI finds them relative to its own location
#   share/specd/{configs,models}    the shipped configurations and models (runtime): the
#                                   configurations name their models as ../models/*.gguf
#   include/specd/, lib/cmake/specd the SDK: ABI headers, C++ helpers, CMake package (sdk)
#
# `cmake --install build --component sdk` installs the SDK alone; so does configuring sdk/ on
# its own (make install-sdk), which needs no core build at all.
include(GNUInstallDirs)
# Install rules that name no component (the CLI's) belong to the runtime.
set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME runtime)

set(SPECD_INSTALL_PLUGINDIR lib/specd/plugins CACHE STRING
    "Where the bundled plugins are installed, relative to the prefix")
if(IS_ABSOLUTE "${SPECD_INSTALL_PLUGINDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
  message(FATAL_ERROR "SPECD_INSTALL_PLUGINDIR (${SPECD_INSTALL_PLUGINDIR}) and "
          "CMAKE_INSTALL_BINDIR (${CMAKE_INSTALL_BINDIR}) must be relative to the prefix: the "
          "installed CLI finds its plugins relative to itself")
endif()
# The plugin folder as seen from the CLI's folder ("../lib/specd/plugins"), compiled into the
# plugin registry (core/plugin/registry.cpp).
file(RELATIVE_PATH SPECD_PLUGINDIR_FROM_BINDIR "/${CMAKE_INSTALL_BINDIR}"
     "/${SPECD_INSTALL_PLUGINDIR}")

set(SPECD_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/specd)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${SPECD_INSTALL_DATADIR}/configs
        COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/ DESTINATION ${SPECD_INSTALL_DATADIR}/models
        COMPONENT runtime FILES_MATCHING PATTERN "*.gguf" PATTERN "*.md")
