# `specd run` on a TOML file with an unknown key on line 3 exits 2, and the message has
# ":3:" and the key.
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/unknown_key.toml "[engine]\nthreads = 1\ntemprature = 0.7\n[target]\nmodel = \"m.gguf\"\n")
execute_process(COMMAND ${SPECD_CLI} run -c ${WORK_DIR}/unknown_key.toml -p hi
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit status 2, got ${rc}: ${err}")
endif()
if(NOT err MATCHES "unknown_key.toml:3:[0-9]+: unknown key 'temprature'")
  message(FATAL_ERROR "message lacks file:3:col and the key: ${err}")
endif()
execute_process(COMMAND ${SPECD_CLI} run -c ${WORK_DIR}/missing.toml
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "missing.toml: no such configuration file")
  message(FATAL_ERROR "missing file: status ${rc}, message ${err}")
endif()
execute_process(COMMAND ${SPECD_CLI} frobnicate RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "unknown command 'frobnicate'")
  message(FATAL_ERROR "unknown command: status ${rc}, message ${err}")
endif()
