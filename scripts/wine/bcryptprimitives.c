/* A stand-in for Windows' bcryptprimitives.dll where Wine has none (Wine 8.0): its one
 * export the Rust standard library imports, ProcessPrng, answered by advapi32's
 * RtlGenRandom (exported as SystemFunction036). For tests under Wine only; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
