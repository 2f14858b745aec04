# specd_add_script_test(NAME PYTHON SCRIPT ARG...): a Python script that runs `specd` end to
# end, as a test labelled model, bounded by 240 s; it exits 77 to report itself skipped.
function(specd_add_script_test name python script)
  add_test(NAME ${name} COMMAND ${python} ${script} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS model SKIP_RETURN_CODE 77 TIMEOUT 240)
endfunction()
