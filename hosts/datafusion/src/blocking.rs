// SPDX-License-Identifier: Apache-2.0
//! Waiting on futures from synchronous ABI calls: `block_on` polls on the
//! calling thread (it may nest, as chained planner answers need), and
//! `block_on_io` runs object-store futures on a small runtime of its own.

use std::sync::{Arc, OnceLock};

/// A small runtime of its own for object-store futures a plugin waits on
/// synchronously: `Handle::block_on` is not allowed on DataFusion's worker
/// threads, and stores such as the local file system need a reactor.
pub(crate) fn io_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("qlink-io")
            .enable_all()
            .build()
            .expect("qlink io runtime")
    })
}

struct ThreadWaker(std::thread::Thread);
impl std::task::Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Poll a future to completion on this thread, parking between polls.
/// Unlike futures' block_on it may nest (a planner's plan_physical inside
/// another's), which planning a chain of plugin answers needs.
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = std::task::Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Run `fut` to completion from any thread, sync.
pub fn block_on_io<T: Send + 'static>(fut: impl std::future::Future<Output = T> + Send + 'static) -> T {
    let handle = io_runtime().spawn(fut);
    block_on(handle).expect("qlink io task panicked")
}
