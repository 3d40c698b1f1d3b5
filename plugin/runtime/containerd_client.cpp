#include "plugin/runtime/containerd_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "github.com/containerd/containerd/api/events/container.pb.h"
#include "github.com/containerd/containerd/api/services/containers/v1/containers.grpc.pb.h"
#include "github.com/containerd/containerd/api/services/events/v1/events.grpc.pb.h"
#include "plugin/runtime/containerd_record.h"

namespace memcg::runtime {
namespace {

namespace cv1 = containerd::services::containers::v1;
namespace ev1 = containerd::services::events::v1;
using Steady = std::chrono::steady_clock;

constexpr size_t kMaxQueuedEvents = 4096;  // more before the worker drains them: list again instead

// An event's payload. containerd names its event types without the
// "type.googleapis.com/" prefix protobuf's Any::UnpackTo requires
// ("containerd.events.ContainerCreate"), so the name is compared by its last
// component (found on the real containerd 1.6.20: UnpackTo took no event).
template <typename Message>
bool unpack(const google::protobuf::Any& any, Message& m) {
  std::string_view url = any.type_url();
  if (const size_t slash = url.rfind('/'); slash != std::string_view::npos) url.remove_prefix(slash + 1);
  return url == Message::descriptor()->full_name() && m.ParseFromString(any.value());
}

ContainerdContainer from_proto(const cv1::Container& c) {
  ContainerdContainer out{c.id(), c.image(), {}, c.spec().type_url(), c.spec().value()};
  out.labels.reserve(std::min<size_t>(c.labels().size(), kMaxContainerdLabels));
  for (const auto& [k, v] : c.labels()) {
    if (out.labels.size() >= kMaxContainerdLabels) break;
    out.labels.emplace_back(k, v);
  }
  return out;
}

// errno for a failed call: what the socket file says when it is missing or
// closed to us, else what the status means.
int call_errno(const grpc::Status& st, const std::string& socket) {
  struct stat sb{};
  if (::stat(socket.c_str(), &sb) != 0) return errno;
  switch (st.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED: return ETIMEDOUT;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return EMSGSIZE;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED: return EACCES;
    case grpc::StatusCode::UNAVAILABLE: return ECONNREFUSED;
    case grpc::StatusCode::CANCELLED: return ECANCELED;
    default: return EPROTO;
  }
}

}  // namespace

// What the event stream heard, for the worker to act on.
struct ContainerEvent {
  std::string ns, id;
  bool deleted = false;
};

class ContainerdClient::Task final : public LookupWorker::Task {
 public:
  Task(Options options, LookupWorker& worker);
  ~Task() override;

  bool pending() const override;
  void step(int cancel_fd) override;
  Steady::time_point wake_at() const override;
  void cancel() override;

  std::shared_ptr<const RecordMap> records() const {
    std::lock_guard lock(mu_);
    return records_.published;
  }
  uint64_t generation() const {
    std::lock_guard lock(mu_);
    return records_.generation;
  }
  ContainerdStats stats() const {
    std::lock_guard lock(mu_);
    ContainerdStats s = stats_;
    s.cached = records_.found.size();
    s.connected = stream_up_ && listed_ok_;
    return s;
  }
  std::vector<IoError> take_errors() {
    std::lock_guard lock(mu_);
    return std::exchange(errors_, {});
  }

  // From gRPC's threads (the event stream).
  void heard(const ev1::Envelope& env);
  void stream_ended();

 private:
  class EventStream;

  bool list_all();                    // every namespace; false on a failure (reported)
  void apply(const ContainerEvent& e);
  void failed(const char* what, const grpc::Status& st);
  grpc::ClientContext& start_call(grpc::ClientContext& ctx, const std::string& ns, Duration timeout);

  const Options options_;
  LookupWorker& worker_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<cv1::Containers::Stub> containers_;
  std::unique_ptr<ev1::Events::Stub> events_;

  mutable std::mutex mu_;  // everything below, unless marked
  std::deque<ContainerEvent> queue_;
  Steady::time_point list_at_{};      // the next list (retry or resync)
  Steady::time_point stream_at_{};    // the next subscription attempt
  bool stream_up_ = false, stream_ended_ = false, listed_ok_ = false;
  PublishedRecords records_;
  ContainerdStats stats_;
  bool failing_ = false;
  std::vector<IoError> errors_;

  std::unique_ptr<EventStream> stream_;  // the worker's (and the destructor's)
  std::mutex call_mu_;                   // the call in progress, for cancel()
  grpc::ClientContext* call_ = nullptr;
  bool cancelled_ = false;
};

// containerd's event stream, read by gRPC's callback API: each envelope is
// handed to the task and the next read started; OnDone ends it.
class ContainerdClient::Task::EventStream final : public grpc::ClientReadReactor<ev1::Envelope> {
 public:
  EventStream(ev1::Events::Stub& stub, Task& owner) : owner_(owner) {
    request_.add_filters(R"(topic~="^/containers/")");
    stub.async()->Subscribe(&ctx_, &request_, this);
    StartRead(&envelope_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok) {
      owner_.heard(envelope_);
      StartRead(&envelope_);
    }  // else the stream ended: OnDone follows
    // gRPC runs OnDone only after this returns; the lock lets ThreadSanitizer
    // see that order too (it cannot see gRPC's own synchronization).
    std::lock_guard lock(mu_);
  }
  void OnDone(const grpc::Status&) override {
    owner_.stream_ended();
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  void stop() {
    ctx_.TryCancel();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }

 private:
  Task& owner_;
  grpc::ClientContext ctx_;
  ev1::SubscribeRequest request_;
  ev1::Envelope envelope_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

ContainerdClient::Task::Task(Options options, LookupWorker& worker) : options_(std::move(options)), worker_(worker) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10'000);
  channel_ = grpc::CreateCustomChannel("unix:" + options_.socket, grpc::InsecureChannelCredentials(), args);
  containers_ = cv1::Containers::NewStub(channel_);
  events_ = ev1::Events::NewStub(channel_);
}

ContainerdClient::Task::~Task() {
  if (stream_) stream_->stop();  // gRPC is done with it (and with us) after this
}

bool ContainerdClient::Task::pending() const {
  std::lock_guard lock(mu_);
  const auto now = Steady::now();
  return !queue_.empty() || now >= list_at_ || (!stream_up_ && now >= stream_at_) || stream_ended_;
}

Steady::time_point ContainerdClient::Task::wake_at() const {
  std::lock_guard lock(mu_);
  return stream_up_ ? list_at_ : std::min(list_at_, stream_at_);
}

void ContainerdClient::Task::cancel() {
  std::lock_guard lock(call_mu_);
  cancelled_ = true;
  if (call_) call_->TryCancel();
}

grpc::ClientContext& ContainerdClient::Task::start_call(grpc::ClientContext& ctx, const std::string& ns, Duration timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!ns.empty()) ctx.AddMetadata("containerd-namespace", ns);
  std::lock_guard lock(call_mu_);
  if (cancelled_) ctx.TryCancel();
  call_ = &ctx;
  return ctx;
}

void ContainerdClient::Task::failed(const char* what, const grpc::Status& st) {
  std::lock_guard lock(mu_);
  if (failing_) return;
  failing_ = true;
  errors_.push_back({what, options_.socket + " (" + st.error_message() + ")", call_errno(st, options_.socket)});
}

void ContainerdClient::Task::heard(const ev1::Envelope& env) {
  ContainerEvent e;
  e.ns = env.namespace_();
  if (std::find(options_.namespaces.begin(), options_.namespaces.end(), e.ns) == options_.namespaces.end()) return;
  containerd::events::ContainerCreate create;
  containerd::events::ContainerUpdate update;
  containerd::events::ContainerDelete del;
  if (env.topic() == "/containers/create" && unpack(env.event(), create)) {
    e.id = create.id();
  } else if (env.topic() == "/containers/update" && unpack(env.event(), update)) {
    e.id = update.id();
  } else if (env.topic() == "/containers/delete" && unpack(env.event(), del)) {
    e.id = del.id();
    e.deleted = true;
  } else {
    return;
  }
  {
    std::lock_guard lock(mu_);
    ++stats_.events;
    if (queue_.size() >= kMaxQueuedEvents) {
      queue_.clear();  // the worker is far behind: a list catches up at once
      list_at_ = Steady::time_point{};
    } else {
      queue_.push_back(std::move(e));
    }
  }
  worker_.notify();
}

void ContainerdClient::Task::stream_ended() {
  {
    std::lock_guard lock(mu_);
    stream_up_ = false;
    stream_ended_ = true;
  }
  worker_.notify();
}

// One thing per turn: (re)subscribe, list, or act on one event.
void ContainerdClient::Task::step(int) {
  bool subscribe = false, list = false;
  std::optional<ContainerEvent> event;
  {
    std::lock_guard lock(mu_);
    const auto now = Steady::now();
    if (stream_ended_) {
      stream_ended_ = false;
      list_at_ = std::min(list_at_, now + options_.retry);  // events may have been missed while it was down
      stream_at_ = now + options_.retry;
    } else if (!stream_up_ && now >= stream_at_) {
      subscribe = true;
      stream_up_ = true;  // until OnDone says otherwise
    } else if (now >= list_at_) {
      list = true;
    } else if (!queue_.empty()) {
      event = std::move(queue_.front());
      queue_.pop_front();
    }
  }
  if (subscribe) {
    // Subscribed before listing: nothing created between the two is missed.
    if (stream_) stream_->stop();  // one that ended: OnDone has run, this returns at once
    stream_ = std::make_unique<EventStream>(*events_, *this);
  } else if (list) {
    const bool ok = list_all();
    std::lock_guard lock(mu_);
    list_at_ = Steady::now() + (ok ? options_.resync : options_.retry);
  } else if (event) {
    apply(*event);
  }
}

// Every container of every namespace looked at, in one new map.
bool ContainerdClient::Task::list_all() {
  RecordMap fresh;
  for (const auto& ns : options_.namespaces) {
    grpc::ClientContext ctx;
    start_call(ctx, ns, 5 * options_.timeout);
    auto reader = containers_->ListStream(&ctx, cv1::ListContainersRequest{});
    cv1::ListContainerMessage msg;
    std::string error;
    while (reader->Read(&msg))
      if (fresh.size() < options_.max_entries)
        if (auto r = containerd_record(from_proto(msg.container()), error)) fresh.emplace(r->id, std::move(*r));
    const grpc::Status st = reader->Finish();
    {
      std::lock_guard lock(call_mu_);
      call_ = nullptr;
    }
    if (!st.ok()) {
      failed("list containers at", st);
      std::lock_guard lock(mu_);
      ++stats_.lists_failed;
      listed_ok_ = false;
      return false;
    }
  }
  std::lock_guard lock(mu_);
  failing_ = false;
  ++stats_.lists_ok;
  listed_ok_ = true;
  records_.found = std::move(fresh);
  records_.publish();
  return true;
}

// A created (or updated) container is asked for; a deleted one forgotten.
void ContainerdClient::Task::apply(const ContainerEvent& e) {
  if (e.deleted) {
    std::lock_guard lock(mu_);
    if (records_.found.erase(e.id) > 0) records_.publish();
    return;
  }
  grpc::ClientContext ctx;
  start_call(ctx, e.ns, options_.timeout);
  cv1::GetContainerRequest req;
  req.set_id(e.id);
  cv1::GetContainerResponse resp;
  const grpc::Status st = containers_->Get(&ctx, req, &resp);
  {
    std::lock_guard lock(call_mu_);
    call_ = nullptr;
  }
  std::string error;
  std::optional<ContainerRecord> r;
  if (st.ok()) r = containerd_record(from_proto(resp.container()), error);
  if (!st.ok() && st.error_code() != grpc::StatusCode::NOT_FOUND) failed("ask containerd at", st);
  std::lock_guard lock(mu_);
  const LookupResult result = r ? LookupResult::ok : st.error_code() == grpc::StatusCode::NOT_FOUND ? LookupResult::not_found
                                                                                                  : LookupResult::error;
  ++stats_.lookups[static_cast<size_t>(result)];
  if (result != LookupResult::error) failing_ = false;
  if (r && (records_.found.size() < options_.max_entries || records_.found.count(r->id))) {
    records_.found[r->id] = std::move(*r);
    records_.publish();
  }
}

ContainerdClient::ContainerdClient(Options options, LookupWorker& worker)
    : worker_(worker), task_(std::make_shared<Task>(std::move(options), worker)) {
  worker_.add(task_);
}

ContainerdClient::~ContainerdClient() {
  task_->cancel();  // a call in progress ends now, not at its deadline
  worker_.remove(task_.get());
}

std::shared_ptr<const RecordMap> ContainerdClient::records() const { return task_->records(); }
uint64_t ContainerdClient::generation() const { return task_->generation(); }
ContainerdStats ContainerdClient::stats() const { return task_->stats(); }
std::vector<IoError> ContainerdClient::take_errors() { return task_->take_errors(); }

}  // namespace memcg::runtime
