# What the -P test scripts share. run_checked(COMMAND...): runs a command and stops the script
# with its output when it fails; its output is left in last_output and last_error.
function(run_checked)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
  set(last_error "${err}" PARENT_SCOPE)
endfunction()

# require_listed(LISTING FAILURE ID...): stops the script with FAILURE, the missing id and the
# listing unless the listing (`specd plugins --json`) holds a plugin of each ID.
function(require_listed listing failure)
  foreach(id ${ARGN})
    if(NOT listing MATCHES "\"id\":\"${id}\"")
      message(FATAL_ERROR "${failure} ${id}:\n${listing}")
    endif()
  endforeach()
endfunction()
