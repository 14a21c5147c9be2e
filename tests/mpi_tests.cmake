# The distributed tests: every tests/distributed/test_*.c program runs under mpirun with 2 ranks
# (distributed/<name>) and with 1 (distributed/<name>_np1), with a time limit, so that a hang is a
# failure and not a stuck CI job. OpenMPI refuses to start as root (containers, CI) without
# --allow-run-as-root, and 2 ranks on a 1-core runner need --oversubscribe.
set(CTORCH_MPI_TEST_NAMES "")
set(CTORCH_MPI_TEST_TIMEOUT 300)
if(CTORCH_USE_MPI)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE mpiexec_version ERROR_QUIET)
  set(CTORCH_MPIEXEC_FLAGS ${MPIEXEC_PREFLAGS})
  if(mpiexec_version MATCHES "Open MPI|OpenRTE")
    list(APPEND CTORCH_MPIEXEC_FLAGS --allow-run-as-root --oversubscribe)
    set(CTORCH_MPIEXEC_IS_OPENMPI ON)
  endif()
endif()

# mpirun -np <ranks> <flags> <program> <args...> as a list.
function(ctorch_mpirun_command out ranks)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${CTORCH_MPIEXEC_FLAGS} ${ARGN}
      ${MPIEXEC_POSTFLAGS} PARENT_SCOPE)
endfunction()

function(ctorch_add_mpi_tests name target)
  target_link_libraries(${target} PRIVATE MPI::MPI_C)
  ctorch_mpirun_command(two 2 $<TARGET_FILE:${target}>)
  ctorch_mpirun_command(one 1 $<TARGET_FILE:${target}>)
  add_test(NAME ${name} COMMAND ${two})
  add_test(NAME ${name}_np1 COMMAND ${one})
  set(CTORCH_MPI_TEST_NAMES ${CTORCH_MPI_TEST_NAMES} ${name} ${name}_np1 PARENT_SCOPE)
endfunction()

# A test program that starts MPI jobs itself (`mpirun -np 2 ctorch train` in tests/tools): it gets
# the launcher's command line in pieces, CTORCH_MPIRUN "<mpiexec> <-np flag>" before the count and
# CTORCH_MPIRUN_FLAGS after it, and the distributed tests' environment and time limit.
function(ctorch_add_mpi_launching_test name target)
  list(JOIN CTORCH_MPIEXEC_FLAGS " " flags)
  target_compile_definitions(${target} PRIVATE CTORCH_MPIRUN="${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG}"
                             CTORCH_MPIRUN_FLAGS="${flags}")
  add_test(NAME ${name} COMMAND ${target})
  set(CTORCH_MPI_TEST_NAMES ${CTORCH_MPI_TEST_NAMES} ${name} PARENT_SCOPE)
endfunction()

# Faults: a rank that exits with an error mid-job (or calls ct_dist_abort) while the other waits
# in a collective ends the whole job with a non-zero status within the time limit (OpenMPI's
# mpirun does that by default); the script checks both the status and the time.
if(CTORCH_USE_MPI)
  add_executable(distributed_rank_failure distributed/rank_failure.c)
  set_target_properties(distributed_rank_failure PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/distributed)
  target_compile_options(distributed_rank_failure PRIVATE ${CTORCH_WARNINGS})
  target_link_libraries(distributed_rank_failure PRIVATE ctorch)
  foreach(mode exit abort)
    ctorch_mpirun_command(job 2 $<TARGET_FILE:distributed_rank_failure> ${mode})
    add_test(NAME distributed/rank_failure_${mode}_ends_the_job
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/check_job_fails.sh 60 ${job})
    list(APPEND CTORCH_MPI_TEST_NAMES distributed/rank_failure_${mode}_ends_the_job)
  endforeach()

  # Rank 1 does not come to rank 0's collective (stopped, late, or gone into ct_dist_finalize):
  # with a limit of 2 s the job ends within the check's limit, each rank saying what happened
  # (tests/distributed/collective_timeout.c). Without a limit, rank 0 waits for ever.
  add_executable(distributed_collective_timeout distributed/collective_timeout.c)
  set_target_properties(distributed_collective_timeout PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/distributed)
  target_compile_options(distributed_collective_timeout PRIVATE ${CTORCH_WARNINGS})
  target_link_libraries(distributed_collective_timeout PRIVATE ctorch)
  set(says_stop --says "rank 0: CT_ERR_TIMEOUT: ct_dist_all_reduce: timed out after 2 s"
      --says "rank 1 did not arrive")
  set(says_late --says "rank 0: CT_ERR_TIMEOUT: ct_dist_all_reduce: timed out after 2 s"
      --says "rank 1: CT_ERR_TIMEOUT: ct_dist_all_reduce: rank 0 gave up waiting in ct_dist_all_reduce")
  set(says_finalize --says "rank 0: CT_ERR_INVALID_ARGUMENT: ct_dist_all_reduce: rank 1 called ct_dist_finalize"
      --says "rank 1: CT_ERR_INVALID_ARGUMENT: ct_dist_finalize: rank 0 called ct_dist_all_reduce")
  foreach(mode stop late finalize)
    ctorch_mpirun_command(job 2 $<TARGET_FILE:distributed_collective_timeout> ${mode})
    add_test(NAME distributed/collective_timeout_${mode}_names_the_missing_rank
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/distributed/check_job_fails.sh ${says_${mode}} 30
                     env CTORCH_DIST_TIMEOUT=2 ${job})
    list(APPEND CTORCH_MPI_TEST_NAMES distributed/collective_timeout_${mode}_names_the_missing_rank)
  endforeach()
endif()

function(ctorch_set_mpi_test_properties)
  if(NOT CTORCH_MPI_TEST_NAMES)
    return()
  endif()
  # Two ranks share the 2 cores with their OpenMP threads: spinning threads would starve the
  # other rank. hwloc need not open PoCL while mpirun starts.
  # Containers may forbid the cross-memory attach OpenMPI's shared-memory transport uses for large
  # messages ("Read -1, expected ..., errno = 1"): plain copies work everywhere.
  set(environment ${CTORCH_TEST_ENVIRONMENT} "OMP_WAIT_POLICY=passive" "HWLOC_COMPONENTS=-opencl"
      "OMPI_MCA_btl_vader_single_copy_mechanism=none")
  if(CTORCH_SANITIZE)
    # Full stacks for leaks: what OpenMPI keeps past MPI_Finalize is allocated in plugins without
    # frame pointers, and only the whole stack reaches the MPI libraries tests/lsan.supp names.
    list(FILTER environment EXCLUDE REGEX "^ASAN_OPTIONS=")
    list(APPEND environment "ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:intercept_tls_get_addr=0:fast_unwind_on_malloc=0")
  endif()
  set_tests_properties(${CTORCH_MPI_TEST_NAMES} PROPERTIES ENVIRONMENT "${environment}"
                       TIMEOUT ${CTORCH_MPI_TEST_TIMEOUT} PROCESSORS 2)
endfunction()
