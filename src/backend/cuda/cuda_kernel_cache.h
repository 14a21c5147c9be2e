/* The CUDA backend's disk cache of compiled kernels (see cuda_kernel_cache.c). */
#ifndef CT_CUDA_KERNEL_CACHE_H
#define CT_CUDA_KERNEL_CACHE_H

#define CT_CUDA_CACHE_KEY_SIZE 33 /* 32 hex digits and the NUL */

/* The key of a compile from everything it depends on (each part a string). */
void ct_cuda_cache_key(const char *const parts[], int count, char key[CT_CUDA_CACHE_KEY_SIZE]);
/* The PTX stored under key (malloc'ed, NUL-terminated), or NULL when there is none or the file is
 * damaged. */
char *ct_cuda_cache_read(const char *key);
/* Stores ptx under key, atomically; silently does nothing where it cannot. */
void ct_cuda_cache_write(const char *key, const char *ptx);
/* Removes what is stored under key (the driver refused it). */
void ct_cuda_cache_discard(const char *key);

#endif
