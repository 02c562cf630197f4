# cmake -DKIT=<switchyard-conformance> -DPLUGIN=<libswitchyard-wrong.so> -P expect_wrong_plugin.cmake
#
# The conformance kit must catch the wrong plugin (tests/sdk/wrong_plugin.cpp): a non-zero exit,
# FAIL lines for scale (wrong values) and sigmoid (unwritten elements), and PASS, never FAIL,
# for add and mul.
execute_process(COMMAND ${KIT} ${PLUGIN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "switchyard-conformance exit ${rc}\n${out}${err}")

set(problems "")
if(rc EQUAL 0)
  string(APPEND problems "exit status is 0, expected non-zero\n")
endif()
foreach(expected
    "FAIL  scale f32->f32 {32, 4, 1, 1}  err"
    "FAIL  sigmoid f32->f32 {32, 4, 1, 1}.*not written"
    "PASS  add f32,f32->f32 {32, 4, 1, 1}"
    "PASS  add f32,f32->f32 {33, 7, 2, 1} transposed src0"
    "PASS  mul f32,f32->f32 {67, 3, 2, 3}"
    "SKIP  add f32,f32->f32 {67, 5, 4, 3} src1 {67, 1, 1, 1} broadcast"
    "wrong: [0-9]+ passed, [0-9]+ failed")
  if(NOT out MATCHES "${expected}")
    string(APPEND problems "output lacks '${expected}'\n")
  endif()
endforeach()
foreach(forbidden "FAIL  add" "FAIL  mul" "PASS  scale" "PASS  sigmoid")
  if(out MATCHES "${forbidden}")
    string(APPEND problems "output contains '${forbidden}'\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "the conformance kit did not report the wrong plugin as expected:\n${problems}")
endif()
