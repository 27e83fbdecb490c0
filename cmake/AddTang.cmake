# tang's CMake helpers: libraries that install into tang's own export set
# (TangTargets, imported by downstream projects through TangConfig.cmake as
# Tang::<name>) rather than into MLIR's.

# add_tang_library(name <add_mlir_library arguments>)
#   A static library of tang: built like an MLIR library (tablegen
#   dependencies, LINK_LIBS, the dylib link mode) and installed to lib/ as
#   part of the TangTargets export set.
function(add_tang_library name)
  add_mlir_library(${name} DISABLE_INSTALL ${ARGN})
  target_include_directories(${name} INTERFACE $<INSTALL_INTERFACE:include>)
  install(TARGETS ${name}
    EXPORT TangTargets
    COMPONENT tang
    ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX})
  set_property(GLOBAL APPEND PROPERTY TANG_LIBS ${name})
endfunction()
