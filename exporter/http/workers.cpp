#include "exporter/http/workers.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace memcg::exporter {

Request request_of(const Job& job, std::vector<Header>& fields) {
  const std::string_view head = job.head_bytes();
  Request req;
  req.method = method_of(job.head.method.of(head));
  const std::string_view target = job.head.target.of(head);
  const size_t q = target.find('?');
  req.path = target.substr(0, q);
  req.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  fields.clear();
  fields.reserve(job.head.fields.size());
  for (const auto& [name, value] : job.head.fields) fields.push_back({name.of(head), value.of(head)});
  req.headers = fields;
  return req;
}

Workers::Workers(size_t n, Handler handler)
    : handler_(std::move(handler)), notify_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!notify_.valid()) throw std::runtime_error(std::string("cannot create the workers' eventfd: ") + std::strerror(errno));
  threads_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    threads_.emplace_back([this] { run(); });
    ::pthread_setname_np(threads_.back().native_handle(), "http-worker");
  }
}

Workers::~Workers() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Workers::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::vector<Reply> Workers::take() {
  uint64_t n = 0;
  (void)::read(notify_.get(), &n, sizeof n);  // reset before taking: a reply added after is signalled again
  std::lock_guard lock(mu_);
  return std::exchange(done_, {});
}

void Workers::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Reply reply = handler_(job);
    reply.conn = job.conn;
    {
      std::lock_guard lock(mu_);
      done_.push_back(std::move(reply));
    }
    const uint64_t one = 1;
    (void)::write(notify_.get(), &one, sizeof one);
  }
}

}  // namespace memcg::exporter
