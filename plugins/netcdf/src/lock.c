/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: the one mutex every libnetcdf call runs under, and the
 * process's exit (ncf.h). */
#include <pthread.h>
#include <stdlib.h>

#include "ncf.h"

static pthread_mutex_t nc_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int exiting;

void ncf_lock(void) { pthread_mutex_lock(&nc_mutex); }

void ncf_unlock(void) { pthread_mutex_unlock(&nc_mutex); }

/* At exit, before HDF5's own handler (registered by libnetcdf's first
 * open, so earlier, so run later) tears HDF5 down: from here on no thread
 * calls libnetcdf (a host's runtime may still release a dataset from a
 * worker thread while the process exits). */
static void at_exit(void) {
  ncf_lock();
  exiting = 1;
  ncf_unlock();
}

static void register_exit(void) { atexit(at_exit); }

void ncf_opened(void) { pthread_once(&exit_once, register_exit); }

int ncf_exiting(void) { return exiting; }
