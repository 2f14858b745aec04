#include "config/config_schema.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "common/error.hpp"
#include "sampling/sampling_ranges.hpp"
#include "tokenizer/unicode.hpp"

namespace specd::config_schema {

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date/time";
  }
}

namespace {

// Typed readers: on a wrong type or a value out of range they record a problem and leave the
// destination unchanged.
void read_string(Context& c, const std::string& key, const toml::node& n, std::string& out) {
  if (auto v = n.value<std::string>(); v && n.is_string()) {
    out = *v;
  } else {
    c.add(n, "'" + key + "' must be a string, not " + type_name(n));
  }
}

// A file path: a non-empty string.
void read_path(Context& c, const std::string& key, const toml::node& n, std::string& out) {
  read_string(c, key, n, out);
  if (n.is_string() && out.empty()) c.add(n, "'" + key + "' must be a file path, not empty");
}

// A KV cache type: f32, f16 or q8_0 (llama.cpp's -ctk/-ctv names).
void read_kv_type(Context& c, const std::string& key, const toml::node& n, std::string& out) {
  std::string v;
  read_string(c, key, n, v);
  if (!n.is_string()) return;
  if (v != "f32" && v != "f16" && v != "q8_0") {
    c.add(n, "'" + key + "' must be \"f32\", \"f16\" or \"q8_0\", not '" + v + "'");
    return;
  }
  out = v;
}

void read_bool(Context& c, const std::string& key, const toml::node& n, bool& out) {
  if (n.is_boolean()) {
    out = *n.value<bool>();
  } else {
    c.add(n, "'" + key + "' must be true or false, not " + type_name(n));
  }
}

template <class Int>
void read_int(Context& c, const std::string& key, const toml::node& n, Int& out, int64_t lo,
              int64_t hi, const std::string& range_text) {
  if (!n.is_integer()) {
    // A --set value of digits that TOML could not read is an integer beyond 64 bits (a
    // quoted number that fits is a string like any other).
    const std::string* text = n.is_string() ? &n.ref<std::string>() : nullptr;
    const size_t sign = text && !text->empty() && (*text)[0] == '-' ? 1 : 0;
    if (text && text->size() > sign + 18 && text->size() < 64 &&
        text->find_first_not_of("0123456789", sign) == std::string::npos) {
      errno = 0;
      (void)std::strtoll(text->c_str(), nullptr, 10);
      if (errno == ERANGE) {
        c.add(n, "'" + key + "' = " + *text + " is out of range (" + range_text + ")");
        return;
      }
    }
    c.add(n, "'" + key + "' must be an integer, not " + type_name(n));
    return;
  }
  int64_t v = *n.value<int64_t>();
  if (v < lo || v > hi) {
    c.add(n, "'" + key + "' = " + std::to_string(v) + " is out of range (" + range_text + ")");
    return;
  }
  out = static_cast<Int>(v);
}

// `check` returns "" when the value is fine, else the range the value must be in.
void read_float(Context& c, const std::string& key, const toml::node& n, double& out,
                const std::function<std::string(double)>& check) {
  if (!n.is_number()) {
    c.add(n, "'" + key + "' must be a number, not " + type_name(n));
    return;
  }
  double v = *n.value<double>();
  std::string range = check(v);
  if (!range.empty()) {
    std::ostringstream s;
    s << "'" << key << "' = " << v << " is out of range (" << range << ")";
    c.add(n, s.str());
    return;
  }
  out = v;
}

void read_string_array(Context& c, const std::string& key, const toml::node& n,
                       std::vector<std::string>& out) {
  const toml::array* a = n.as_array();
  if (!a) {
    if (n.is_string()) {  // a single string is accepted as a one-element list
      out = {*n.value<std::string>()};
      return;
    }
    c.add(n, "'" + key + "' must be an array of strings, not " + type_name(n));
    return;
  }
  std::vector<std::string> values;
  for (const auto& item : *a) {
    if (!item.is_string()) {
      c.add(item, "'" + key + "' must hold only strings, not " + type_name(item));
      return;
    }
    values.push_back(*item.value<std::string>());
  }
  out = values;
}

// Turns `p` (holding the TOML text of array `a`) into an array parameter when every element
// has one type (integers mixed with floats: floats); leaves it a string otherwise.
void to_array_param(Context& c, const toml::array& a, PluginParam& p) {
  std::vector<PluginParam> elements;
  for (const toml::node& item : a) {
    if (item.is_table()) return;
    elements.push_back(to_param(c, "", item));
    // Elements on a --set line have no line of their own: they are where the array is.
    if (item.source().begin.line == 0) elements.back().location = p.location;
    if (elements.back().type == PluginParam::Type::string && item.is_array()) return;
  }
  using T = PluginParam::Type;
  bool numbers = !elements.empty(), any_float = false;
  for (const PluginParam& e : elements) {
    numbers = numbers && (e.type == T::integer || e.type == T::floating);
    any_float = any_float || e.type == T::floating;
  }
  for (PluginParam& e : elements) {
    if (numbers && any_float) {
      e.type = T::floating;  // float_value already holds an integer's value
    } else if (e.type != elements.front().type) {
      return;
    }
  }
  p.type = T::array;
  p.elements = std::move(elements);
}

}  // namespace

PluginParam to_param(Context& c, const std::string& key, const toml::node& n) {
  PluginParam p;
  p.key = key;
  p.location = c.where(n);
  if (n.is_boolean()) {
    p.type = PluginParam::Type::boolean;
    p.bool_value = *n.value<bool>();
  } else if (n.is_integer()) {
    p.type = PluginParam::Type::integer;
    p.int_value = *n.value<int64_t>();
    p.float_value = static_cast<double>(p.int_value);
  } else if (n.is_floating_point()) {
    p.type = PluginParam::Type::floating;
    p.float_value = *n.value<double>();
  } else if (n.is_string()) {
    p.string_value = *n.value<std::string>();
  } else {
    std::ostringstream s;
    if (n.is_array())
      s << *n.as_array();
    else if (n.is_table())
      s << *n.as_table();
    p.string_value = s.str();
    if (n.is_array()) to_array_param(c, *n.as_array(), p);
  }
  return p;
}

std::map<std::string, SectionSchema> make_schema(Config& cfg) {
  std::map<std::string, SectionSchema> s;
  auto& engine = s["engine"].keys;
  engine["backend"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.engine.backend);
  };
  engine["threads"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.engine.threads, 0, kMaxThreads, "0 = all cores, up to 256");
  };
  engine["seed"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.engine.seed, 0, INT64_MAX, ">= 0");
  };
  engine["context"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.engine.context, 0, 1 << 24,
             "0 = the model's, else 2 (a prompt token and one to generate) up to 16M");
    if (cfg.engine.context == 1)
      c.add(n, "'" + k +
                   "' = 1 leaves no room to generate: at least 2 tokens (a prompt token "
                   "and one to generate), or 0 for the model's context");
  };
  engine["kv_type"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_kv_type(c, k, n, cfg.engine.kv_type);
  };

  auto& target = s["target"].keys;
  target["model"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_path(c, k, n, cfg.target.model);
  };
  target["backend"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.target.backend);
  };
  target["kv_type"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_kv_type(c, k, n, cfg.target.kv_type);
  };

  auto& proposer = s["proposer"];
  proposer.passes_unknown_to_plugin = true;
  proposer.plugin_params = &cfg.proposer.params;
  proposer.keys["kind"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.proposer.kind);
  };
  proposer.keys["model"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_path(c, k, n, cfg.proposer.model);
  };
  proposer.keys["backend"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.proposer.backend);
  };
  proposer.keys["kv_type"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_kv_type(c, k, n, cfg.proposer.kv_type);
  };
  proposer.keys["k"] = [&](Context& c, const std::string& k, const toml::node& n) {
    if (n.is_string() && *n.value<std::string>() == "auto") {
      cfg.proposer.k_auto = true;
      return;
    }
    if (n.is_string()) {
      c.add(n, "'k' must be an integer >= 1 or \"auto\"");
      return;
    }
    read_int(c, k, n, cfg.proposer.k, 1, 64, "k >= 1, at most 64");
  };

  auto& acceptance = s["acceptance"];
  acceptance.passes_unknown_to_plugin = true;
  acceptance.plugin_params = &cfg.acceptance.params;
  acceptance.keys["rule"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.acceptance.rule);
  };
  acceptance.keys["allow_lossy"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_bool(c, k, n, cfg.acceptance.allow_lossy);
  };

  auto& verifier = s["verifier"];
  verifier.passes_unknown_to_plugin = true;
  verifier.plugin_params = &cfg.verifier.params;
  verifier.keys["kind"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.verifier.kind);
  };

  auto& sampling = s["sampling"].keys;
  sampling["temperature"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.sampling.temperature, temperature_range);
  };
  sampling["top_k"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.sampling.top_k, 0, INT32_MAX, "0 = off, else >= 1");
  };
  sampling["top_p"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.sampling.top_p, top_p_range);
  };
  sampling["min_p"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.sampling.min_p, min_p_range);
  };
  sampling["max_tokens"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.sampling.max_tokens, 1, 1 << 24, ">= 1");
  };
  sampling["stop"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string_array(c, k, n, cfg.sampling.stop);
    // A stop string must never cut a character: it must be whole UTF-8 characters itself
    // (a --set value that is not TOML arrives as raw bytes).
    for (const std::string& stop : cfg.sampling.stop)
      for (size_t i = 0; i < stop.size();) {
        const Utf8Unit u = utf8_next(stop, i);
        if (!u.valid) {
          c.add(n,
                "'stop' strings must be valid UTF-8 (a stop string must never cut a "
                "character); byte " +
                    std::to_string(i) + " of one is not");
          cfg.sampling.stop.clear();
          return;
        }
        i += u.len;
      }
  };
  sampling["grammar"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.sampling.grammar);
  };
  sampling["grammar_file"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.sampling.grammar_file);
  };
  sampling["json_schema_file"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.sampling.json_schema_file);
  };
  sampling["ignore_eos"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_bool(c, k, n, cfg.sampling.ignore_eos);
  };
  auto penalty_range = [](double v) {
    return v >= -2 && v <= 2 ? std::string() : std::string("-2 to 2");
  };
  sampling["presence_penalty"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.sampling.presence_penalty, penalty_range);
  };
  sampling["frequency_penalty"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.sampling.frequency_penalty, penalty_range);
  };
  sampling["repeat_penalty"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.sampling.repeat_penalty, [](double v) {
      return v >= 0.01 && v <= 10 ? std::string() : std::string("0.01 to 10; 1 = off");
    });
  };
  sampling["repeat_last_n"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.sampling.repeat_last_n, -1, 1 << 24,
             "-1 = the whole context, 0 = off, else a number of tokens");
  };

  auto& server = s["server"].keys;
  server["host"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.server.host);
    if (n.is_string() && cfg.server.host.empty()) c.add(n, "'host' must not be empty");
  };
  server["port"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.port, 0, 65535, "0 = any free port, up to 65535");
  };
  server["max_sequences"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.max_sequences, 1, 256, "1 to 256");
  };
  server["max_prefill_rows"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.max_prefill_rows, 0, 1 << 20, "0 = no limit, up to 1048576");
  };
  server["queue_limit"] = [&](Context& c, const std::string& k, const toml::node& n) {
    // Each waiting request holds one HTTP thread and the pool is sized from this limit.
    read_int(c, k, n, cfg.server.queue_limit, 0, 1024,
             "0 to 1024: each waiting request holds one of the server's HTTP threads");
  };
  server["kv_budget"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.kv_budget, 0, 1 << 24, "0 = the context, up to 16M tokens");
  };
  server["max_body_bytes"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.max_body_bytes, 64, int64_t(1) << 30, "64 bytes to 1 GiB");
  };
  server["api_key"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.server.api_key);
  };
  server["model_name"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.server.model_name);
  };
  server["chat_template"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string(c, k, n, cfg.server.chat_template);
  };
  server["chat_template_file"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_path(c, k, n, cfg.server.chat_template_file);
  };
  server["max_engines"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.max_engines, 1, 8, "1 to 8");
  };
  server["drain_timeout_s"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.server.drain_timeout_s,
               [](double v) { return v >= 0 && v <= 3600 ? "" : "0 to 3600 seconds"; });
  };
  server["allow_public_without_key"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_bool(c, k, n, cfg.server.allow_public_without_key);
  };
  server["max_n"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.max_n, 1, 128, "1 to 128");
  };
  server["prefix_cache"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_bool(c, k, n, cfg.server.prefix_cache);
  };
  for (const auto& entry :
       {std::pair{"kv_events_endpoint", &cfg.server.kv_events_endpoint},
        std::pair{"kv_events_replay_endpoint", &cfg.server.kv_events_replay_endpoint},
        std::pair{"kv_events_topic", &cfg.server.kv_events_topic}}) {
    std::string* field = entry.second;  // (a structured binding cannot be captured in C++17)
    server[entry.first] = [field](Context& c, const std::string& k, const toml::node& n) {
      read_string(c, k, n, *field);
    };
  }
  server["verify_sessions"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.verify_sessions, 0, 1024, "0 = no /v1/verify, up to 1024");
  };
  server["verify_idle_s"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.server.verify_idle_s, [](double v) {
      return v >= 1 && v <= 86400 ? std::string() : std::string("1 to 86400 seconds");
    });
  };
  server["verify_yield_s"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.server.verify_yield_s, [](double v) {
      return v >= 0.1 && v <= 86400 ? std::string() : std::string("0.1 to 86400 seconds");
    });
  };
  server["kv_wait_s"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.server.kv_wait_s, [](double v) {
      return v >= 0.1 && v <= 86400 ? std::string() : std::string("0.1 to 86400 seconds");
    });
  };

  server["request_timeout_s"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_float(c, k, n, cfg.server.request_timeout_s, [](double v) {
      return v >= 1 && v <= 3600 ? std::string() : std::string("1 to 3600 seconds");
    });
  };
  server["max_waiting_per_client"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_int(c, k, n, cfg.server.max_waiting_per_client, 0, 65536, "0 = no cap, up to 65536");
  };

  auto& plugins = s["plugins"].keys;
  plugins["paths"] = [&](Context& c, const std::string& k, const toml::node& n) {
    read_string_array(c, k, n, cfg.plugins.paths);
  };
  return s;
}

}  // namespace specd::config_schema
