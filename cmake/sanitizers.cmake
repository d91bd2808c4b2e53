# Sanitizer and fuzzing instrumentation for the whole tree (docs/fuzzing.md).
#
# PLANNER_SANITIZE=address,undefined (gcc or clang) or thread instruments every target; every
# report is fatal (-fno-sanitize-recover), so a test that trips one fails. PLANNER_FUZZ=ON
# (clang only) adds ASan + UBSan and libFuzzer's coverage instrumentation to every library;
# fuzz/CMakeLists.txt links the harnesses with -fsanitize=fuzzer.
set(_planner_sanitize "${PLANNER_SANITIZE}")
if(PLANNER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PLANNER_FUZZ=ON needs clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ (scripts/fuzz.sh does)")
  endif()
  if(_planner_sanitize STREQUAL "")
    set(_planner_sanitize "address,undefined")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
if(NOT _planner_sanitize STREQUAL "")
  if(NOT _planner_sanitize MATCHES "^(address|undefined|address,undefined|undefined,address|thread)$")
    message(FATAL_ERROR "PLANNER_SANITIZE=${_planner_sanitize}: expected address,undefined or thread")
  endif()
  set(_planner_sanitize_flags -fsanitize=${_planner_sanitize} -fno-sanitize-recover=all
                              -fno-omit-frame-pointer)
  add_compile_options(${_planner_sanitize_flags})
  add_link_options(${_planner_sanitize_flags})
endif()
