/* The kernel clock inside a whole-graph program (execmode/kernel_clock.py): while a
 * profiler or em.compare measures, each step's time is summed into the int64 array the
 * program was given: (calls, ns, min, max) per step, and the same for whole runs. One
 * clock read per step; nothing but a test of one integer when nobody measures.
 * CLOCK_MONOTONIC is the clock of Python's time.perf_counter_ns on Linux. */
#include <time.h>

static inline long long em_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The steps' clock. Where the CPU's time-stamp counter runs at one constant rate
 * (codegen/clock_mode.py defines EM_CLOCK_TSC), a step's time is read from it, in ticks
 * that kernel_clock.py turns into ns: a read costs a few ns, where clock_gettime waits
 * for the step's memory operations to finish first and so cost 20-50 ns a read by what
 * the step did (which the profiler's calibration could not know). Elsewhere, ns. */
#if defined(EM_CLOCK_TSC) && defined(__x86_64__)
#include <x86intrin.h>
static inline long long em_clock_ticks(void)
{
    return (long long)__rdtsc();
}
#else
static inline long long em_clock_ticks(void)
{
    return em_clock_ns();
}
#endif

/* Adds the time since t0 to the sums at s; returns now, the next step's t0. Not inlined:
 * a program calls it once per step, and 200 inlined copies made GCC take 0.9 s instead
 * of 0.3 s over a 200-step program (a call is ~1 ns beside the clock read it makes). */
static __attribute__((noinline)) long long em_clock_step(long long *s, long long t0)
{
    long long now = em_clock_ticks(), d = now - t0;
    s[0] += 1;
    s[1] += d;
    if (d < s[2])
        s[2] = d;
    if (d > s[3])
        s[3] = d;
    return now;
}
