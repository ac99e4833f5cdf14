# `cmake --install`: the public headers, the libraries, the `switchyard` CLI, a
# CMake package (switchyardConfig.cmake, its version file and the targets in
# the switchyard:: namespace) and a pkg-config file (switchyard.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every library, in link order (each before what it depends on): the .pc file's Libs.
set(switchyard_libraries
  switchyard_contention switchyard_halo switchyard_dynamic switchyard_dynamic_core switchyard_model_collectives switchyard_model_calibration
  switchyard_primitives switchyard_schedulers_redistribution switchyard_schedulers switchyard_schedulers_core
  switchyard_primitives_core switchyard_model_core switchyard_runtime switchyard_transport)
set(switchyard_header_only switchyard_base)

# Exported as switchyard::<name>, the names of their aliases in the build tree.
foreach(target IN LISTS switchyard_libraries switchyard_header_only)
  string(REGEX REPLACE "^switchyard_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
endforeach()

install(TARGETS ${switchyard_libraries} ${switchyard_header_only} switchyard_all
        EXPORT switchyardTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir IN LISTS SWITCHYARD_HEADER_FOLDERS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
if(TARGET switchyard_cli)
  install(TARGETS switchyard_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(switchyard_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/switchyard)
install(EXPORT switchyardTargets NAMESPACE switchyard:: DESTINATION ${switchyard_cmake_dir})
# switchyard::transport_mpi in an export set of its own, which the package
# loads (with MPI) only for a consumer that asks for the component.
set_target_properties(switchyard_transport_mpi PROPERTIES EXPORT_NAME transport_mpi)
install(TARGETS switchyard_transport_mpi EXPORT switchyardMpiTargets
        OBJECTS DESTINATION ${CMAKE_INSTALL_LIBDIR}/switchyard)
install(EXPORT switchyardMpiTargets NAMESPACE switchyard:: DESTINATION ${switchyard_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/switchyardConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/switchyardConfig.cmake
                              INSTALL_DESTINATION ${switchyard_cmake_dir})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/switchyardConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/switchyardConfig.cmake ${PROJECT_BINARY_DIR}/switchyardConfigVersion.cmake
        DESTINATION ${switchyard_cmake_dir})

# pkg-config: the libraries are static, so what they link privately (hwloc,
# oneTBB) must be on every consumer's link line: its -L/-l flags follow ours in
# Libs (not Requires.private: `pkg-config --static` would then add hwloc's own
# static dependencies, libudev among them, which a shared hwloc does not need).
# Their headers stay out of Cflags.
list(TRANSFORM switchyard_libraries PREPEND "-l" OUTPUT_VARIABLE switchyard_pc_libs)
get_target_property(tbb_location TBB::tbb LOCATION)
get_filename_component(tbb_dir "${tbb_location}" DIRECTORY)
# No MPI: the MPI transport is switchyard::transport_mpi's, for CMake consumers.
list(APPEND switchyard_pc_libs ${HWLOC_LDFLAGS} -L${tbb_dir} -ltbb)
list(JOIN switchyard_pc_libs " " SWITCHYARD_PC_LIBS)
file(RELATIVE_PATH SWITCHYARD_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" SWITCHYARD_PC_UP "${SWITCHYARD_PC_UP}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/switchyard.pc.in ${PROJECT_BINARY_DIR}/switchyard.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/switchyard.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
