/* The time-stamp counter, read from Python (codegen/clock_mode.py) to learn how many ns a
 * tick of the kernel clock is (em_clock.h reads the same counter in compiled steps). */
#include <x86intrin.h>

long long em_clock_ticks_now(void)
{
    return (long long)__rdtsc();
}
