# 1. Installs the SDK alone to a scratch prefix from sdk/ configured on its own: no core
#    build, no CLI in the prefix.
# 2. Builds every example of sdk/examples/ against it with find_package(specd).
# 3. `specd plugins --json` lists them (SPECD_PLUGIN_PATH); each exports one symbol.
# 4. At temperature 0 the example proposer (chain and tree) and the C rule give the same
#    tokens as plain decoding of the shipped target, and accept drafts.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

include(${CMAKE_CURRENT_LIST_DIR}/../install/script_checks.cmake)

run_checked(${CMAKE_COMMAND} -S ${SPECD_SOURCE_DIR}/sdk -B ${WORK_DIR}/sdk-build)
run_checked(${CMAKE_COMMAND} --install ${WORK_DIR}/sdk-build --prefix ${prefix})
foreach(f include/specd/acceptance.h include/specd/c/plugin.h include/specd/cpp/plugin.hpp
          lib/cmake/specd/specdConfig.cmake lib/cmake/specd/SpecdPlugin.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the SDK install lacks ${f}")
  endif()
endforeach()
if(EXISTS ${prefix}/bin)
  message(FATAL_ERROR "the SDK-only install put programs in ${prefix}/bin")
endif()

# The package is versioned by the ABI: the current minor is found, the next one is not.
file(STRINGS ${SPECD_SOURCE_DIR}/sdk/include/specd/version.h abi_lines
     REGEX "^#define SPECD_ABI_VERSION_(MAJOR|MINOR) [0-9]+u$")
string(REGEX MATCH "MAJOR ([0-9]+)u" _ "${abi_lines}")
set(abi_major ${CMAKE_MATCH_1})
string(REGEX MATCH "MINOR ([0-9]+)u" _ "${abi_lines}")
set(abi_minor ${CMAKE_MATCH_1})
math(EXPR next_minor "${abi_minor} + 1")
foreach(wanted ${abi_major}.${abi_minor} ${abi_major}.${next_minor})
  set(probe ${WORK_DIR}/probe-${wanted})
  file(WRITE ${probe}/CMakeLists.txt
       "cmake_minimum_required(VERSION 3.25)\nproject(probe NONE)\n"
       "find_package(specd ${wanted} REQUIRED)\n"
       "message(STATUS \"abi=\${SPECD_ABI_VERSION_MAJOR}.\${SPECD_ABI_VERSION_MINOR}\")\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${probe} -B ${probe}/build
                          -DCMAKE_PREFIX_PATH=${prefix}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(wanted STREQUAL "${abi_major}.${abi_minor}" AND
     (NOT rc EQUAL 0 OR NOT out MATCHES "abi=${abi_major}.${abi_minor}"))
    message(FATAL_ERROR "find_package(specd ${wanted}) failed on the SDK of that ABI:\n${out}\n${err}")
  elseif(wanted STREQUAL "${abi_major}.${next_minor}" AND rc EQUAL 0)
    message(FATAL_ERROR "find_package(specd ${wanted}) accepted an SDK of ABI ${abi_major}.${abi_minor}")
  endif()
endforeach()
foreach(f share/doc/specd-sdk/README.md share/doc/specd-sdk/CHANGELOG.md
          share/doc/specd-sdk/examples/successor/successor.cpp
          share/doc/specd-sdk/examples/text-lookup/text_lookup.cpp
          share/doc/specd-sdk/docs/PLUGINS.md share/doc/specd-sdk/docs/AUDIT.md
          share/doc/specd-sdk/docs/ABI-1.0.md)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the SDK install lacks ${f}")
  endif()
endforeach()
# The installed docs are self-contained: every relative link resolves inside the install.
file(GLOB_RECURSE installed_docs ${prefix}/share/doc/specd-sdk/*.md)
foreach(doc ${installed_docs})
  file(READ ${doc} text)
  get_filename_component(dir ${doc} DIRECTORY)
  # (A list element holding "]" would not split: the link's start is renamed first.)
  string(REPLACE "](" "<link>" text "${text}")
  string(REGEX MATCHALL "<link>[^)# ]+" links "${text}")
  foreach(link ${links})
    string(REPLACE "<link>" "" target "${link}")
    if(target MATCHES "://")
      continue()  # a web address
    endif()
    if(NOT EXISTS ${dir}/${target})
      message(FATAL_ERROR "${doc} links to ${target}, which the SDK install lacks")
    endif()
  endforeach()
endforeach()

# Every example, with the compilers of this build.
file(GLOB examples LIST_DIRECTORIES true ${SPECD_SOURCE_DIR}/sdk/examples/*)
set(plugin_path)
set(plugin_files)
foreach(example ${examples})
  if(NOT EXISTS ${example}/CMakeLists.txt)
    continue()
  endif()
  get_filename_component(name ${example} NAME)
  set(build ${WORK_DIR}/examples/${name})
  run_checked(${CMAKE_COMMAND} -S ${example} -B ${build} -DCMAKE_PREFIX_PATH=${prefix}
              -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=${C_COMPILER}
              -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_COMPILE_WARNING_AS_ERROR=ON)
  run_checked(${CMAKE_COMMAND} --build ${build})
  file(GLOB built ${build}/*.so)
  if(NOT built)
    message(FATAL_ERROR "example ${name} built no plugin in ${build}")
  endif()
  list(APPEND plugin_files ${built})
  list(APPEND plugin_path ${build})
endforeach()
string(REPLACE ";" ":" plugin_path "${plugin_path}")
set(ENV{SPECD_PLUGIN_PATH} "${plugin_path}")

run_checked(${SPECD_CLI} plugins --json)
set(listing "${last_output}")
require_listed("${listing}" "specd plugins does not list the out-of-tree plugin"
               com.example.accept.sample-only com.example.propose.successor
               com.example.accept.argmax-c com.example.propose.text-lookup)
# A proposer's details: its flags and default rule.
if(NOT listing MATCHES "\"id\":\"com.example.propose.successor\"[^}]*\"trees\":true,\"provides_q\":false,\"target_features\":false,\"default_rule\":\"exact-match\"")
  message(FATAL_ERROR "the proposer's details are missing:\n${listing}")
endif()
if(NOT listing MATCHES "\"label\":\"greedy-exact\"")
  message(FATAL_ERROR "the C rule's label is missing:\n${listing}")
endif()

# Only the entry symbol is exported.
foreach(plugin ${plugin_files})
  execute_process(COMMAND nm -D --defined-only ${plugin} OUTPUT_VARIABLE symbols)
  string(REGEX MATCHALL " [TDBR] [A-Za-z_][A-Za-z0-9_]*" exported "${symbols}")
  list(LENGTH exported n_exported)
  if(NOT n_exported EQUAL 1 OR NOT symbols MATCHES "specd_plugin_entry")
    message(FATAL_ERROR "${plugin} must export only specd_plugin_entry, it exports:\n${symbols}")
  endif()
endforeach()

# Greedy runs: the drafts and the rule must not change a single token.
file(WRITE ${WORK_DIR}/greedy.toml "[engine]
backend = \"cpu\"
threads = 1
seed = 1
[target]
model = \"${SPECD_SOURCE_DIR}/models/target.gguf\"
[proposer]
kind = \"successor\"
k = 4
[sampling]
temperature = 0.0
max_tokens = 40
")
set(prompt "def add(a, b):\n    return a + b\n\ndef add3(a, b, c):\n    return")
function(greedy_tokens out_var)
  run_checked(${SPECD_CLI} run -c ${WORK_DIR}/greedy.toml -p "${prompt}" --json ${ARGN})
  string(JSON tokens GET "${last_output}" tokens)
  string(JSON accepted GET "${last_output}" stats accepted)
  set(${out_var} "${tokens}" PARENT_SCOPE)
  set(${out_var}_accepted "${accepted}" PARENT_SCOPE)
endfunction()
greedy_tokens(plain --set proposer.kind=none)
foreach(variant "chain" "tree" "chain_c" "tree_c" "tree_c1" "text")
  set(args)
  if(variant STREQUAL "text")
    list(APPEND args --set proposer.kind=text-lookup)
  endif()
  if(variant MATCHES "^tree")
    list(APPEND args --set proposer.shape=tree --set proposer.branches=3)
  endif()
  if(variant MATCHES "_c1?$")
    list(APPEND args --set acceptance.rule=argmax-c)
  endif()
  if(variant MATCHES "_c1$")
    list(APPEND args --set acceptance.max_accept=1)
  endif()
  greedy_tokens(drafted ${args})
  if(NOT drafted STREQUAL plain)
    message(FATAL_ERROR "${variant}: greedy output differs from plain decoding:\n"
            "plain   ${plain}\ndrafted ${drafted}")
  endif()
  if(NOT drafted_accepted GREATER 0)
    message(FATAL_ERROR "${variant}: no draft token was accepted (the prompt repeats itself)")
  endif()
endforeach()
# The C rule's parameter check names the key and where it was set.
execute_process(COMMAND ${SPECD_CLI} run -c ${WORK_DIR}/greedy.toml -p "${prompt}"
                --set acceptance.rule=argmax-c --set acceptance.max_accept=-1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--set acceptance.max_accept: key 'max_accept' must be an integer >= 0")
  message(FATAL_ERROR "argmax-c accepted max_accept = -1 (exit ${rc}):\n${out}\n${err}")
endif()
message(STATUS "SDK installed alone; ${plugin_files} built out of tree, listed and run")
