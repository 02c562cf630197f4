// A persistent pool of worker threads. Threads are created once (and again only when the thread
// count changes); the calling thread works too, so a pool of N threads starts N - 1 workers.
// Between jobs a worker spins (with pause) for up to kSpin, then sleeps on a condition variable;
// after the first 50 us the spin yields the CPU now and then, so that another backend's threads
// (the simulated device's pool, oneDNN's) get the cores a waiting pool would hold (faster with
// two backends, the cpu alone unchanged: docs/design-measurements.md#thread-pool-yield).
// Token generation runs many short jobs back to back, and waking a sleeping thread costs tens of
// microseconds (more in a VM): a sleeping pool loses a noticeable share of a short GEMV
// (docs/design-measurements.md#thread-pool-spin).
//
// The calling thread waits only for workers that joined the job, never for one still waking up:
// a worker joins by counting itself active and then checking that the job is still open, and
// the caller, once every task is claimed, closes the job and waits for the active count to drop
// to zero (both sequentially consistent, so one of the two sees the other). A worker that wakes
// late finds the job closed, or helps with what is left. (Waiting for every worker made the
// first job after an idle spell, as when a GPU ran the layers before it, wait for the sleeping
// worker's CPU to be scheduled again, a long wait on a VM:
// docs/design-measurements.md#thread-pool-late-workers.)
//
// A job is a number of tasks, split into one contiguous stripe per thread: each thread claims
// the tasks of its own stripe in order from an atomic counter, then helps with what is left of
// the others'. Neighbouring tasks (consecutive weight rows, say) thus mostly run on the same
// thread, while uneven tasks still balance without any scheduling up front. One job runs at a time:
// callers serialize on an internal mutex, so the pool is safe to share, but a task must not start a
// job of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sy::cpu {

class ThreadPool {
  public:
    explicit ThreadPool(int threads);
    ~ThreadPool();  // wakes and joins every worker
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return threads_; }

    // Runs fn(task) for every task in [0, n_tasks) and returns when all have finished. An
    // exception thrown by a task is rethrown here (the first one; the other tasks still run).
    template <typename Fn>
    void parallel_for(int64_t n_tasks, Fn&& fn) {
        run(
            n_tasks, [](void* f, int64_t task) { (*static_cast<Fn*>(f))(task); }, &fn);
    }

    // Splits [0, n_items) into contiguous ranges and calls fn(begin, end) for each; at most one
    // range when the whole job is smaller than `min_items_per_task`, so that small ops do not
    // pay for waking threads.
    template <typename Fn>
    void parallel_ranges(int64_t n_items, int64_t min_items_per_task, Fn&& fn) {
        if (n_items <= 0) return;
        const int64_t n_tasks = range_task_count(n_items, min_items_per_task);
        const int64_t per_task = (n_items + n_tasks - 1) / n_tasks;
        parallel_for(n_tasks, [&](int64_t task) {
            const int64_t begin = task * per_task;
            const int64_t end = begin + per_task < n_items ? begin + per_task : n_items;
            if (begin < end) fn(begin, end);
        });
    }

    // How long an idle thread spins before it sleeps: on the mini model longer than the host's
    // work between two decode steps (sampling, building and binding the next graph), so that the
    // first job of a token does not wait for a sleeping worker (with a shorter spin that wait
    // slowed the token's first GEMV: docs/design-measurements.md#thread-pool-spin). Not
    // measured on a full-size model, whose graphs take longer to build.
    static constexpr std::chrono::microseconds kSpin{1000};

  private:
    using TaskFn = void (*)(void* context, int64_t task);

    void run(int64_t n_tasks, TaskFn fn, void* context);
    void worker_loop(int self);
    void work_on_current_job(int self);
    int64_t range_task_count(int64_t n_items, int64_t min_items_per_task) const;

    const int threads_;
    std::vector<std::thread> workers_;
    std::mutex submit_mutex_;  // one job at a time

    // Job state, written before the generation changes (a release store under state_mutex_, so
    // that both spinning and sleeping workers see it).
    std::mutex state_mutex_;
    std::condition_variable job_ready_;
    std::condition_variable job_done_;
    std::atomic<uint64_t> generation_{0};  // bumped once per job; workers wait for a new value
    std::atomic<bool> stopping_{false};
    std::atomic<bool> open_{false};  // the current job takes workers (until all tasks are claimed)
    std::atomic<int> active_{0};     // workers inside the current job
    TaskFn job_fn_ = nullptr;
    void* job_context_ = nullptr;
    std::exception_ptr job_error_;

    struct alignas(64) Stripe {
        std::atomic<int64_t> next{0};  // the stripe's next unclaimed task
        int64_t end = 0;
    };
    std::unique_ptr<Stripe[]> stripes_;  // one per thread, the calling thread's first
};

}  // namespace sy::cpu
