#include "thread_pool.hpp"

#include <algorithm>

namespace sy::cpu {

ThreadPool::ThreadPool(int threads)
    : threads_(std::max(1, threads)), stripes_(std::make_unique<Stripe[]>(size_t(threads_))) {
    workers_.reserve(size_t(threads_ - 1));
    try {
        for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
    } catch (...) {
        // Could not start every thread: stop the ones that did start before reporting.
        {
            std::lock_guard lock(state_mutex_);
            stopping_ = true;
        }
        job_ready_.notify_all();
        for (std::thread& t : workers_) t.join();
        throw;
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(state_mutex_);
        stopping_ = true;
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
        for (int64_t task = 0; task < n_tasks; ++task) fn(context, task);
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
        workers_busy_ = int(workers_.size());
        ++generation_;
    }
    job_ready_.notify_all();
    work_on_current_job(0);

    std::exception_ptr error;
    {
        std::unique_lock lock(state_mutex_);
        job_done_.wait(lock, [this] { return workers_busy_ == 0; });
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
    for (;;) {
        {
            std::unique_lock lock(state_mutex_);
            job_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
        }
        work_on_current_job(self);
        {
            std::lock_guard lock(state_mutex_);
            if (--workers_busy_ == 0) job_done_.notify_one();
        }
    }
}

}  // namespace sy::cpu
