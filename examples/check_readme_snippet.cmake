# Checks that a documentation page (README.md or a page of docs/) quotes,
# verbatim, the part of an example between the lines "// [readme-begin]" and
# "// [readme-end]", so the page's code is the code that is compiled and tested.
#   cmake -DSOURCE=<example.cpp> -DPAGE=<page.md> -P check_readme_snippet.cmake
cmake_minimum_required(VERSION 3.25)
file(READ "${SOURCE}" source)
string(FIND "${source}" "// [readme-begin]\n" begin)
string(FIND "${source}" "// [readme-end]" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${SOURCE}: no '// [readme-begin]' ... '// [readme-end]' block")
endif()
math(EXPR begin "${begin} + 18")
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${source}" ${begin} ${length} snippet)
file(READ "${PAGE}" page)
string(FIND "${page}" "${snippet}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${PAGE} does not contain the current code of ${SOURCE} between its readme markers:\n${snippet}")
endif()
