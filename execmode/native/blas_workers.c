/* NumPy's OpenBLAS runs its parallel jobs on execmode's OpenMP team (blas_workers.py),
 * where the user asked for it (EXECMODE_BLAS_CALLBACK=1; OpenBLAS's own threads are the
 * default).
 *
 * OpenBLAS (pthreads build, 0.3.28 and later) hands every multi-threaded call to this
 * callback (driver/others/blas_server.c, exec_blas): ``numjobs`` jobs, each to be run as
 * ``dojob(slot, jobs + i * job_size, dojob_data)``. Three rules follow from OpenBLAS's
 * source, and each is kept here:
 *
 * 1. All jobs run at once. A threaded GEMM's jobs wait for each other's packed panels
 *    (driver/level3/level3_thread.c, inner_thread spins on job[].working): run one after
 *    the other they would wait forever. So a job set runs on an OpenMP team of exactly
 *    ``numjobs`` threads, checked inside the region before any job starts; where OpenMP
 *    gives fewer (nested inside another team, OMP_DYNAMIC, OMP_THREAD_LIMIT), on threads
 *    started for this call. A thread that cannot be started stops the process, as
 *    OpenBLAS itself does (blas_thread_init): waiting forever or a wrong answer is worse.
 * 2. ``slot`` indexes OpenBLAS's per-thread state (thread_status[] and the packing
 *    buffers blas_thread_buffer[], MAX_CPU_NUMBER of each). OpenBLAS's own worker threads
 *    stay alive and use slots 0 .. blas_num_threads - 2; LU factorisation
 *    (getrf_parallel) still queues jobs to them directly (exec_blas_async), whatever the
 *    callback. Job i therefore takes slot MAX_CPU_NUMBER - 1 - i, from the top, so the
 *    two never share a slot, and one job set at a time holds them (em_lock): two Python
 *    threads calling NumPy at once take turns, as they would for OpenBLAS's workers.
 * 3. A forked child must not use the team when threads ran before the fork (GNU
 *    OpenMP's pool does not survive fork, threads.py): the child handler below gives
 *    OpenBLAS its own threads back in every child (threads.py's Python hook may hand the
 *    jobs to the team again where no team ever ran). The prepare handler waits for a
 *    running job set to finish, so OpenBLAS's own fork handler (blas_thread_shutdown_,
 *    which frees the packing buffers) never runs under one.
 *
 * The bits are OpenBLAS's own at the same thread count: how a product is cut into jobs
 * depends on the count alone, and each job computes the same part with the same code
 * whichever thread runs it (tests/codegen/test_threads.py compares them).
 */
#include <omp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*em_dojob_t)(int slot, void *job, int dojob_data);
typedef void (*em_threads_callback_t)(int sync, em_dojob_t dojob, int numjobs,
                                      size_t job_size, void *jobs, int dojob_data);
typedef void (*em_set_callback_t)(em_threads_callback_t callback);

static em_set_callback_t em_set_callback;        /* openblas_set_threads_callback_function */
static const volatile int *em_openblas_threads;  /* &blas_num_threads: its workers + 1 */
static int em_slots;                             /* MAX_CPU_NUMBER */
static pthread_mutex_t em_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int em_installed;
static volatile int em_dropped_by_fork;
static volatile int em_team_ran;                 /* a team of 2+ threads ran (fork guard) */
static volatile int em_force_new_threads;        /* tests: take rule 1's fallback path */
static volatile long em_team_calls, em_thread_calls;
static volatile int em_warned;
static int em_hooked;
static __thread int em_in_job;

static void em_run_job(em_dojob_t dojob, int i, size_t job_size, void *jobs, int data)
{
    em_in_job = 1;
    dojob(em_slots - 1 - i, (char *)jobs + (size_t)i * job_size, data);
    em_in_job = 0;
}

struct em_task {
    em_dojob_t dojob;
    int i;
    size_t job_size;
    void *jobs;
    int data;
};

static void *em_task_main(void *arg)
{
    struct em_task *t = (struct em_task *)arg;
    em_run_job(t->dojob, t->i, t->job_size, t->jobs, t->data);
    return NULL;
}

/* Rule 1's fallback: one new thread per job but the first, which the caller runs. Where
   OpenMP could never give the team (OMP_THREAD_LIMIT, OMP_DYNAMIC) Python does not install
   the callback at all; this covers a team cut short at run time (nested regions). */
static void em_run_on_new_threads(em_dojob_t dojob, int numjobs, size_t job_size,
                                  void *jobs, int data)
{
    pthread_t *threads = calloc((size_t)numjobs, sizeof(pthread_t));
    struct em_task *tasks = calloc((size_t)numjobs, sizeof(struct em_task));
    if (threads == NULL || tasks == NULL) {
        fprintf(stderr, "execmode: no memory to run OpenBLAS's %d jobs at once; they wait "
                        "for each other, so the process stops here\n", numjobs);
        abort();
    }
    for (int i = 1; i < numjobs; i++) {
        tasks[i] = (struct em_task){dojob, i, job_size, jobs, data};
        int err = pthread_create(&threads[i], NULL, em_task_main, &tasks[i]);
        if (err != 0) {
            fprintf(stderr, "execmode: could not start a thread for OpenBLAS's job %d of %d "
                            "(%s); its jobs wait for each other, so the process stops "
                            "here, as OpenBLAS itself does\n", i + 1, numjobs, strerror(err));
            abort();
        }
    }
    em_run_job(dojob, 0, job_size, jobs, data);
    for (int i = 1; i < numjobs; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    free(tasks);
    em_thread_calls++;
}

static void em_blas_threads(int sync, em_dojob_t dojob, int numjobs, size_t job_size,
                            void *jobs, int data)
{
    (void)sync; /* every job set is run to completion: what sync asks, and more */
    if (numjobs <= 0)
        return;
    if (em_in_job) {
        /* One of our own jobs called back into a threaded BLAS routine: the slots are
           held by the outer job set (OpenBLAS does not do this; its jobs call kernels). */
        fprintf(stderr, "execmode: OpenBLAS started threads from inside one of its jobs; "
                        "execmode's callback cannot give them slots\n");
        abort();
    }
    pthread_mutex_lock(&em_lock);
    if (numjobs > em_slots - (*em_openblas_threads - 1) && !em_warned) {
        /* Rule 2 cannot hold: someone raised OpenBLAS's count past half its slots behind
           execmode's back (threads.py never installs or keeps the callback there). */
        em_warned = 1;
        fprintf(stderr, "execmode: OpenBLAS's %d jobs and its own %d threads need more than "
                        "its %d slots; an LU factorisation running meanwhile in another "
                        "thread could share one\n",
                numjobs, *em_openblas_threads - 1, em_slots);
    }
    if (numjobs == 1) {
        em_run_job(dojob, 0, job_size, jobs, data);
    } else {
        int whole_team = 0;
        if (!em_force_new_threads && !omp_in_parallel()) {
            #pragma omp parallel num_threads(numjobs)
            {
                /* Every thread sees the same team size, so either all jobs start here or
                   none does. */
                if (omp_get_num_threads() == numjobs) {
                    em_run_job(dojob, omp_get_thread_num(), job_size, jobs, data);
                    if (omp_get_thread_num() == 0)
                        whole_team = 1;
                }
            }
        }
        if (whole_team) {
            em_team_ran = 1;
            em_team_calls++;
        } else {
            em_run_on_new_threads(dojob, numjobs, job_size, jobs, data);
        }
    }
    pthread_mutex_unlock(&em_lock);
}

/* --- fork (rule 3) ------------------------------------------------------------------- */

static void em_before_fork(void)
{
    if (!em_in_job)
        pthread_mutex_lock(&em_lock);
}

static void em_after_fork_in_parent(void)
{
    if (!em_in_job)
        pthread_mutex_unlock(&em_lock);
}

static void em_after_fork_in_child(void)
{
    if (!em_in_job)
        pthread_mutex_unlock(&em_lock);
    if (em_installed) {
        em_set_callback(NULL);
        em_installed = 0;
        em_dropped_by_fork = 1;
    }
}

/* --- what Python calls --------------------------------------------------------------- */

/* Hand OpenBLAS's jobs to the team. ``set_callback``: OpenBLAS's
   openblas_set_threads_callback_function; ``openblas_threads``: its blas_num_threads;
   ``slots``: its MAX_CPU_NUMBER. 0 on success. */
int em_blas_workers_install(void *set_callback, const int *openblas_threads, int slots)
{
    if (set_callback == NULL || openblas_threads == NULL || slots < 2)
        return -1;
    if (!em_hooked) {
        if (pthread_atfork(em_before_fork, em_after_fork_in_parent,
                           em_after_fork_in_child) != 0)
            return -2;
        em_hooked = 1;
    }
    em_set_callback = (em_set_callback_t)set_callback;
    em_openblas_threads = openblas_threads;
    em_slots = slots;
    em_dropped_by_fork = 0;
    em_set_callback(em_blas_threads);
    em_installed = 1;
    return 0;
}

/* OpenBLAS's own threads again (for comparisons; a job set under way finishes first). */
void em_blas_workers_uninstall(void)
{
    pthread_mutex_lock(&em_lock);
    if (em_installed)
        em_set_callback(NULL);
    em_installed = 0;
    pthread_mutex_unlock(&em_lock);
}

/* The most threads an OpenMP team started here may get (threads.py checks them against
   OpenBLAS's count before installing): 0 where OpenMP may give fewer than asked
   (OMP_DYNAMIC), else OMP_THREAD_LIMIT (INT_MAX when unset). */
int em_blas_workers_team_limit(void) { return omp_get_dynamic() ? 0 : omp_get_thread_limit(); }

int em_blas_workers_installed(void) { return em_installed; }
int em_blas_workers_dropped_by_fork(void) { return em_dropped_by_fork; }
int em_blas_workers_team_ran(void) { return em_team_ran; }
void em_blas_workers_force_new_threads(int on) { em_force_new_threads = on; }

/* How job sets ran: 0 on the OpenMP team, 1 on threads started for the call. */
long em_blas_workers_calls(int how) { return how == 0 ? em_team_calls : em_thread_calls; }
