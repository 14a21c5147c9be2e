# NCCL for CUDA tensors' collectives (src/distributed/nccl_*.c): built when MPI and the CUDA backend
# are on (the CUDA toolkit's headers found) and nccl.h is found. Nothing is linked: libnccl is opened at run time, first
# by name through the loader's path, then in the folder found here (CTORCH_NCCL_LIBDIR), so that
# the same binary runs where there is no NCCL (CUDA tensors then go through MPI).
option(CTORCH_WITH_NCCL "NCCL for CUDA tensors' collectives (needs MPI, the CUDA backend and nccl.h)" ON)
set(CTORCH_USE_NCCL OFF)
if(CTORCH_WITH_NCCL AND CTORCH_USE_MPI AND CTORCH_WITH_CUDA)
  if(CUDAToolkit_FOUND)
    find_path(CTORCH_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    # The toolkit of CUDA 13 keeps NCCL in lib/, beside lib64/.
    find_library(CTORCH_NCCL_LIBRARY NAMES nccl libnccl.so.2
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_DIR}/../lib ${CUDAToolkit_BIN_DIR}/../lib)
    if(CTORCH_NCCL_INCLUDE_DIR)
      set(CTORCH_USE_NCCL ON)
    endif()
  endif()
endif()
if(CTORCH_USE_NCCL)
  set(CTORCH_NCCL_SOURCES ${PROJECT_SOURCE_DIR}/src/distributed/nccl_backend.c
      ${PROJECT_SOURCE_DIR}/src/distributed/nccl_cuda.c)
  set(CTORCH_NCCL_INCLUDES ${CTORCH_NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  list(REMOVE_DUPLICATES CTORCH_NCCL_INCLUDES)
  set(CTORCH_NCCL_OPTIONS "")
  foreach(dir ${CTORCH_NCCL_INCLUDES})
    list(APPEND CTORCH_NCCL_OPTIONS -isystem ${dir}) # the toolkit's headers are not ours to warn about
  endforeach()
  set_source_files_properties(${CTORCH_NCCL_SOURCES} PROPERTIES COMPILE_OPTIONS "${CTORCH_NCCL_OPTIONS}")
  if(CTORCH_NCCL_LIBRARY)
    get_filename_component(CTORCH_NCCL_LIBDIR ${CTORCH_NCCL_LIBRARY} DIRECTORY)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/src/distributed/nccl_backend.c PROPERTIES
                                COMPILE_DEFINITIONS "CTORCH_NCCL_LIBDIR=\"${CTORCH_NCCL_LIBDIR}\"")
  endif()
  message(STATUS "ctorch: NCCL for CUDA tensors ON (nccl.h in ${CTORCH_NCCL_INCLUDE_DIR}; the library is "
                 "opened at run time, else from '${CTORCH_NCCL_LIBDIR}')")
else()
  message(STATUS "ctorch: NCCL for CUDA tensors OFF (needs MPI, the CUDA backend and nccl.h)")
endif()
