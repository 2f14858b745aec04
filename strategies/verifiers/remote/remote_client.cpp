#include "remote_client.hpp"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace remote {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "f32le-base64 logits are copied as they lie in memory");

// Decodes standard base64 (with '=' padding) into exactly `n` bytes at `out`.
bool base64_decode(const std::string& text, unsigned char* out, size_t n) {
  if (text.size() != (n + 2) / 3 * 4) return false;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  size_t written = 0;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int d = c == '=' ? 0 : value(c);
      if (d < 0) return false;
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    for (int shift = 16; shift >= 0 && written < n; shift -= 8)
      out[written++] = static_cast<unsigned char>(v >> shift);
  }
  return written == n;
}

time_t whole(double s) {
  return static_cast<time_t>(s);
}
time_t micros(double s) {
  return static_cast<time_t>((s - std::floor(s)) * 1e6);
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", s);
  return text;
}

uint32_t positive(const json& body, const char* key, const std::string& where) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_number_unsigned() || it->get<uint64_t>() == 0 ||
      it->get<uint64_t>() > UINT32_MAX)
    throw RemoteError(where + ": the answer lacks a positive '" + key + "'");
  return static_cast<uint32_t>(it->get<uint64_t>());
}

}  // namespace

struct Client::Impl {
  std::unique_ptr<httplib::Client> http;
  std::string path;  // the URL's path prefix + "/v1/verify"
  double timeout_s = 0, connect_timeout_s = 0;
};

Client::Client(const ClientOptions& options) : impl_(std::make_unique<Impl>()) {
  const std::string& url = options.url;
  if (url.rfind("https://", 0) == 0)
    throw RemoteError("url '" + url +
                      "': https is not supported by this build (cpp-httplib without TLS); "
                      "reach the server over a TLS proxy or an SSH tunnel at an http:// URL");
  if (url.rfind("http://", 0) != 0)
    throw RemoteError("url '" + url + "' must start with http:// (e.g. http://10.0.0.2:8080)");
  std::string rest = url.substr(7);
  const size_t slash = rest.find('/');
  std::string host_port = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (host_port.empty()) throw RemoteError("url '" + url + "' names no host");
  std::string host = host_port;
  int port = 80;
  const size_t colon = host_port.rfind(':');
  if (colon != std::string::npos && host_port.find(']', colon) == std::string::npos) {
    host = host_port.substr(0, colon);
    const std::string digits = host_port.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) < 1 ||
        std::stoi(digits) > 65535)
      throw RemoteError("url '" + url + "': the port must be 1 to 65535");
    port = std::stoi(digits);
  }
  impl_->http = std::make_unique<httplib::Client>(host, port);
  impl_->path = prefix + "/v1/verify";
  impl_->timeout_s = options.timeout_s;
  impl_->connect_timeout_s = options.connect_timeout_s;
  endpoint_ = "http://" + host_port + impl_->path;
  httplib::Client& c = *impl_->http;
  c.set_connection_timeout(whole(options.connect_timeout_s), micros(options.connect_timeout_s));
  c.set_read_timeout(whole(options.timeout_s), micros(options.timeout_s));
  c.set_write_timeout(whole(options.timeout_s), micros(options.timeout_s));
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // one small request per round: no Nagle delay
  if (!options.api_key.empty()) c.set_bearer_token_auth(options.api_key.c_str());
}

Client::~Client() = default;

std::string Client::post(const std::string& request) {
  httplib::Result res = impl_->http->Post(impl_->path.c_str(), request, "application/json");
  if (!res) {
    const httplib::Error e = res.error();
    std::string why = httplib::to_string(e);
    if (e == httplib::Error::Connection)
      why = "could not connect (is `specd serve` running there? connect_timeout_s = " +
            seconds(impl_->connect_timeout_s) + ")";
    else if (e == httplib::Error::Read || e == httplib::Error::Write)
      why += " error: no complete answer within timeout_s = " + seconds(impl_->timeout_s);
    throw RemoteError(endpoint_ + ": " + why);
  }
  if (res->status != 200) {
    std::string message = res->body, code;
    const json body = json::parse(res->body, nullptr, false);
    if (!body.is_discarded() && body.contains("error") && body["error"].is_object()) {
      const json& error = body["error"];
      if (error.contains("message") && error["message"].is_string())
        message = error["message"].get<std::string>();
      if (error.contains("code") && error["code"].is_string())
        code = error["code"].get<std::string>();
    }
    if (message.size() > 500) message = message.substr(0, 500) + "...";
    std::string hint;
    if (res->status == 401) hint = " (set [verifier] api_key to the server's [server] api_key)";
    throw RemoteError(endpoint_ + ": HTTP " + std::to_string(res->status) + ": " + message + hint,
                      code);
  }
  return res->body;
}

SessionInfo Client::open() {
  const json body = json::parse(post(json{{"op", "open"}}.dump()), nullptr, false);
  if (body.is_discarded() || !body.is_object())
    throw RemoteError(endpoint_ + ": the answer to open is not a JSON object");
  SessionInfo info;
  if (!body.contains("session") || !body["session"].is_string())
    throw RemoteError(endpoint_ + ": the answer to open has no 'session'");
  info.id = body["session"].get<std::string>();
  info.vocab_size = positive(body, "vocab_size", endpoint_);
  info.n_tokens = positive(body, "n_tokens", endpoint_);
  info.context_length = positive(body, "context_length", endpoint_);
  info.max_nodes = body.value("max_nodes", 0u);
  const std::string digest = body.value("vocab_digest", std::string());
  if (digest.size() != 16 || digest.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw RemoteError(endpoint_ + ": the answer to open has no 16-hex-digit 'vocab_digest'");
  info.vocab_digest = std::stoull(digest, nullptr, 16);
  return info;
}

double Client::verify(const std::string& session, const VerifyCall& call, uint32_t vocab_size,
                      float* logits) {
  json request = {{"op", "verify"},
                  {"session", session},
                  {"delta", call.delta},
                  {"root", call.root},
                  {"tree",
                   {{"tokens", std::vector<int32_t>(call.tokens, call.tokens + call.n_nodes)},
                    {"parents", std::vector<int32_t>(call.parents, call.parents + call.n_nodes)}}}};
  if (call.reset)
    request["reset"] = true;
  else
    request["commit"] = call.commit;
  std::string text = post(request.dump());
  // Fast path: the server writes the logits last as `,"logits":"<base64>"` (base64 holds no
  // quote or escape); they are cut out before parsing the rest, so megabytes of base64 do
  // not go through the JSON parser. Any other layout is parsed whole.
  std::string logits_b64;
  const std::string marker = ",\"logits\":\"";
  if (const size_t at = text.rfind(marker); at != std::string::npos) {
    const size_t from = at + marker.size(), end = text.find('"', from);
    if (end != std::string::npos) {
      logits_b64 = text.substr(from, end - from);
      text.erase(at, end + 1 - at);
    }
  }
  const json body = json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    throw RemoteError(endpoint_ + ": the answer to verify is not a JSON object");
  if (logits_b64.empty() && body.contains("logits") && body["logits"].is_string())
    logits_b64 = body["logits"].get<std::string>();
  const size_t rows = size_t(call.n_nodes) + 1;
  if (body.value("encoding", std::string()) != "f32le-base64")
    throw RemoteError(endpoint_ + ": the answer's 'encoding' is not \"f32le-base64\"");
  if (body.value("rows", size_t(0)) != rows || body.value("vocab_size", 0u) != vocab_size)
    throw RemoteError(endpoint_ + ": the answer has " +
                      std::to_string(body.value("rows", size_t(0))) + " rows of " +
                      std::to_string(body.value("vocab_size", 0u)) + " logits; expected " +
                      std::to_string(rows) + " of " + std::to_string(vocab_size));
  if (!base64_decode(logits_b64, reinterpret_cast<unsigned char*>(logits),
                     rows * vocab_size * sizeof(float)))
    throw RemoteError(endpoint_ + ": the answer's 'logits' is not base64 of " +
                      std::to_string(rows * vocab_size * sizeof(float)) + " bytes");
  const double compute = body.value("compute_s", 0.0);
  return std::isfinite(compute) && compute > 0 ? compute : 0;
}

void Client::close(const std::string& session) noexcept {
  try {
    // Never hold up the end of a run: a second at most per step.
    impl_->http->set_connection_timeout(1, 0);
    impl_->http->set_read_timeout(1, 0);
    impl_->http->set_write_timeout(1, 0);
    impl_->http->Post(impl_->path.c_str(), json{{"op", "close"}, {"session", session}}.dump(),
                      "application/json");
  } catch (...) {
  }
}

}  // namespace remote
