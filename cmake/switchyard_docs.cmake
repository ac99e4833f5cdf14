# The API reference (Doxygen, optional like MPI): `cmake --build build --target
# docs` writes build/docs/api/html from every library's installed headers and
# the guide's pages. Where Doxygen is missing the target only says so.
# SWITCHYARD_DOCS_WARN_AS_ERROR (ON by default) makes any Doxygen warning fail
# the target, as CI builds it.
option(SWITCHYARD_DOCS_WARN_AS_ERROR "Fail the docs target on any Doxygen warning" ON)
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  add_custom_target(docs COMMAND ${CMAKE_COMMAND} -E echo "docs: Doxygen not found (apt-get install doxygen)")
  return()
endif()

# The installed headers: those of every folder the header checks cover.
set(_switchyard_doc_roots "")
foreach(folder ${SWITCHYARD_HEADER_FOLDERS})
  list(APPEND _switchyard_doc_roots "${PROJECT_SOURCE_DIR}/${folder}/include")
endforeach()
list(JOIN _switchyard_doc_roots " " SWITCHYARD_DOCS_INCLUDE_ROOTS)
set(SWITCHYARD_DOCS_INPUT "${SWITCHYARD_DOCS_INCLUDE_ROOTS} ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs")
set(SWITCHYARD_DOCS_OUTPUT "${PROJECT_BINARY_DIR}/docs/api")
set(SWITCHYARD_DOCS_WARN_SETTING NO)
if(SWITCHYARD_DOCS_WARN_AS_ERROR)
  set(SWITCHYARD_DOCS_WARN_SETTING FAIL_ON_WARNINGS)
endif()
configure_file("${PROJECT_SOURCE_DIR}/docs/Doxyfile.in" "${PROJECT_BINARY_DIR}/docs/Doxyfile" @ONLY)
add_custom_target(docs
  COMMAND ${CMAKE_COMMAND} -E make_directory "${SWITCHYARD_DOCS_OUTPUT}"
  COMMAND Doxygen::doxygen "${PROJECT_BINARY_DIR}/docs/Doxyfile"
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
  COMMENT "API reference: ${SWITCHYARD_DOCS_OUTPUT}/html/index.html"
  VERBATIM)
