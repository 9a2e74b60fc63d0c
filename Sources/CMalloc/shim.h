// glibc's allocator controls (malloc_trim, mallopt): not part of Swift's Glibc module.
#include <malloc.h>
