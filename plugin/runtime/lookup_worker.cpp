#include "plugin/runtime/lookup_worker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace memcg::runtime {

LookupWorker::LookupWorker() : cancel_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { run(); });
}

LookupWorker::~LookupWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    if (running_) running_->cancel();
  }
  cv_.notify_all();
  const uint64_t one = 1;
  if (cancel_.valid()) (void)!::write(cancel_.get(), &one, sizeof one);
  thread_.join();
}

void LookupWorker::add(std::shared_ptr<Task> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void LookupWorker::remove(const Task* task) {
  std::lock_guard lock(mu_);
  std::erase_if(tasks_, [&](const auto& t) { return t.get() == task; });
}

void LookupWorker::notify() {
  // Taken and released so the worker cannot be between its check of the
  // tasks and its wait: no wake-up is lost.
  { std::lock_guard lock(mu_); }
  cv_.notify_one();
}

// The next task with a lookup waiting, after the one that had the last turn.
std::shared_ptr<LookupWorker::Task> LookupWorker::next_locked() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const size_t k = (turn_ + i) % tasks_.size();
    if (tasks_[k]->pending()) {
      turn_ = k + 1;
      return tasks_[k];
    }
  }
  return nullptr;
}

void LookupWorker::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    std::shared_ptr<Task> task;
    while (!stop_ && !(task = next_locked())) {
      auto at = std::chrono::steady_clock::time_point::max();
      for (const auto& t : tasks_) at = std::min(at, t->wake_at());
      if (at == std::chrono::steady_clock::time_point::max())
        cv_.wait(lock);
      else
        cv_.wait_until(lock, at);
    }
    if (stop_) return;
    running_ = task;
    lock.unlock();
    task->step(cancel_.get());
    lock.lock();
    running_.reset();
    lock.unlock();
    task.reset();  // a removed task ends here, outside the lock
    lock.lock();
  }
}

}  // namespace memcg::runtime
