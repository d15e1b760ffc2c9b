/* qlink_netcdf: the one mutex every libnetcdf call runs under (ncf.h). */
#include <pthread.h>

#include "ncf.h"

static pthread_mutex_t nc_mutex = PTHREAD_MUTEX_INITIALIZER;

void ncf_lock(void) { pthread_mutex_lock(&nc_mutex); }

void ncf_unlock(void) { pthread_mutex_unlock(&nc_mutex); }
