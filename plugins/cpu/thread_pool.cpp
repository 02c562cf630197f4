#include "thread_pool.hpp"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sy::cpu {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

// Spins until ready() or until `spin` has passed; true when ready.
template <typename Ready>
bool spin_until(Ready ready, std::chrono::microseconds spin) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + spin;
    const auto polite = start + std::chrono::microseconds(50);
    for (unsigned i = 1;; ++i) {
        if (ready()) return true;
        if (i % 64 == 0) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline) return false;
            if (now >= polite) std::this_thread::yield();
        }
        cpu_relax();
    }
}

}  // namespace

ThreadPool::ThreadPool(int threads)
    : threads_(std::max(1, threads)), stripes_(std::make_unique<Stripe[]>(size_t(threads_))) {
    workers_.reserve(size_t(threads_ - 1));
    try {
        for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
    } catch (...) {
        // Could not start every thread: stop the ones that did start before reporting.
        {
            std::lock_guard lock(state_mutex_);
            stopping_.store(true);
        }
        job_ready_.notify_all();
        for (std::thread& t : workers_) t.join();
        throw;
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(state_mutex_);
        stopping_.store(true);
    }
    job_ready_.notify_all();
    for (std::thread& t : workers_) t.join();
}

int64_t ThreadPool::range_task_count(int64_t n_items, int64_t min_items_per_task) const {
    // A few tasks per thread smooths out uneven rows without making tasks tiny.
    const int64_t by_size = n_items / std::max<int64_t>(1, min_items_per_task);
    return std::clamp<int64_t>(by_size, 1, std::min<int64_t>(n_items, int64_t(threads_) * 4));
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* context) {
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || workers_.empty()) {
        std::exception_ptr error;  // the first; the other tasks still run, as on the workers
        for (int64_t task = 0; task < n_tasks; ++task) {
            try {
                fn(context, task);
            } catch (...) {
                if (!error) error = std::current_exception();
            }
        }
        if (error) std::rethrow_exception(error);
        return;
    }
    std::lock_guard submit(submit_mutex_);
    {
        std::lock_guard lock(state_mutex_);
        job_fn_ = fn;
        job_context_ = context;
        job_error_ = nullptr;
        for (int s = 0; s < threads_; ++s) {
            stripes_[s].next.store(n_tasks * s / threads_, std::memory_order_relaxed);
            stripes_[s].end = n_tasks * (s + 1) / threads_;
        }
        open_.store(true);  // after the job's state: a worker that sees it open sees the job
        generation_.fetch_add(1, std::memory_order_release);
    }
    job_ready_.notify_all();
    work_on_current_job(0);

    // Every task is claimed: no worker joins from here on; wait for those that did.
    open_.store(false);
    const auto done = [this] { return active_.load() == 0; };
    spin_until(done, kSpin);
    std::exception_ptr error;
    {
        std::unique_lock lock(state_mutex_);
        job_done_.wait(lock, done);
        error = job_error_;
        job_error_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

// Claims and runs tasks of the current job until none are left: first those of the thread's own
// stripe, in order, then what is left of the others'. The job and the stripes were published
// under state_mutex_, which every thread took after the publication.
void ThreadPool::work_on_current_job(int self) {
    for (int k = 0; k < threads_; ++k) {
        Stripe& stripe = stripes_[(self + k) % threads_];
        for (;;) {
            const int64_t task = stripe.next.fetch_add(1, std::memory_order_relaxed);
            if (task >= stripe.end) break;
            try {
                job_fn_(job_context_, task);
            } catch (...) {
                std::lock_guard lock(state_mutex_);
                if (!job_error_) job_error_ = std::current_exception();
            }
        }
    }
}

void ThreadPool::worker_loop(int self) {
    uint64_t seen = 0;
    const auto ready = [&] {
        return stopping_.load(std::memory_order_acquire) ||
               generation_.load(std::memory_order_acquire) != seen;
    };
    for (;;) {
        if (!spin_until(ready, kSpin)) {
            std::unique_lock lock(state_mutex_);
            job_ready_.wait(lock, ready);
        }
        if (stopping_.load(std::memory_order_acquire)) return;
        seen = generation_.load(std::memory_order_acquire);
        active_.fetch_add(1);
        if (open_.load()) work_on_current_job(self);
        if (active_.fetch_sub(1) == 1) {
            // Under the mutex, so that the caller cannot miss it between its check and its wait.
            std::lock_guard lock(state_mutex_);
            job_done_.notify_one();
        }
    }
}

}  // namespace sy::cpu
