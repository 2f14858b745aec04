# specd_add_subfolders(): add_subdirectory() for every folder below the current one that has a
# CMakeLists.txt, so a new plugin, strategy or test area needs no edit of its parent's list.
function(specd_add_subfolders)
  file(GLOB children LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(child ${children})
    if(IS_DIRECTORY ${child} AND EXISTS ${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
