# switchyard_add_plugin(<backend> SOURCES <src>... [VARIANT <name>] [COMPILE_OPTIONS <opt>...]
#                       [LINK_LIBRARIES <lib>...])
#
# Builds a backend plugin: a MODULE library named libswitchyard-<backend>[-<variant>].so that
# sees only the SDK headers and exports only the plugin entry points. The host finds plugins by
# this name (several variants of one backend are told apart by their sy_plugin_probe score).
# Used in tree and by third parties through find_package(Switchyard).
function(switchyard_add_plugin backend)
  cmake_parse_arguments(ARG "" "VARIANT;OUTPUT_DIRECTORY" "SOURCES;COMPILE_OPTIONS;LINK_LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "switchyard_add_plugin(${backend}): SOURCES is required")
  endif()
  set(target switchyard-${backend})
  if(ARG_VARIANT)
    set(target switchyard-${backend}-${ARG_VARIANT})
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(TARGET Switchyard::sdk)
    target_link_libraries(${target} PRIVATE Switchyard::sdk)
  else()
    target_link_libraries(${target} PRIVATE switchyard_sdk)
  endif()
  target_link_libraries(${target} PRIVATE ${ARG_LINK_LIBRARIES})
  target_compile_options(${target} PRIVATE ${ARG_COMPILE_OPTIONS})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED SWITCHYARD_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${SWITCHYARD_PLUGIN_OUTPUT_DIR})
  endif()
  # Refuse undefined symbols at link time: a plugin must not depend on the host's symbols.
  target_link_options(${target} PRIVATE "LINKER:--no-undefined")
endfunction()
