// Chat templates: recognition from the families' published Jinja texts, and the layout each
// family renders.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "server/chat_template.hpp"
#include "test_paths.hpp"

using namespace specd::server;

namespace {

// Abridged from the templates these families ship in tokenizer_config.json.
const char* kQwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const char* kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
const char* kMistral =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% endif %}{% endfor %}";
const char* kPhi3 =
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
    "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == "
    "'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}";
const char* kGemma =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role "
    "not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == "
    "'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
    "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
    "'<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{'<start_of_turn>model\n'}}{% endif %}";
const char* kLlama2 =
    "{% if messages[0]['role'] == 'system' %}{% set system_message = '<<SYS>>\\n' + "
    "messages[0]['content'] | trim + '\\n<</SYS>>\\n\\n' %}{% endif %}{% for message in "
    "messages %}{{ bos_token + '[INST] ' + content | trim + ' [/INST]' }}{% endfor %}";

const std::vector<ChatMessage> kChat = {
    {"system", "Be brief."}, {"user", "Hello"}, {"assistant", "Hi."}, {"user", "Again"}};

}  // namespace

TEST_CASE("the common families are recognised from their template texts") {
  CHECK(detect_chat_family(kQwen2) == ChatFamily::chatml);
  CHECK(detect_chat_family(kLlama3) == ChatFamily::llama3);
  CHECK(detect_chat_family(kMistral) == ChatFamily::mistral);
  CHECK(detect_chat_family(kPhi3) == ChatFamily::phi3);
  CHECK(detect_chat_family(kGemma) == ChatFamily::gemma);
}

TEST_CASE("an unknown template is refused, not guessed") {
  CHECK_FALSE(detect_chat_family(kLlama2).has_value());  // <<SYS>> is not Mistral's layout
  CHECK_FALSE(detect_chat_family("{{ messages[0]['content'] }}").has_value());
  CHECK_FALSE(detect_chat_family("").has_value());
}

TEST_CASE("family names") {
  CHECK(chat_family_by_name("qwen") == ChatFamily::chatml);
  CHECK(chat_family_by_name("chatml") == ChatFamily::chatml);
  CHECK(chat_family_by_name("gemma") == ChatFamily::gemma);
  CHECK_FALSE(chat_family_by_name("llama2").has_value());
  for (ChatFamily f : {ChatFamily::chatml, ChatFamily::llama3, ChatFamily::mistral,
                       ChatFamily::phi3, ChatFamily::gemma})
    CHECK(chat_family_by_name(chat_family_name(f)) == f);
}

TEST_CASE("rendering follows each family's layout") {
  CHECK(render_chat(ChatFamily::chatml, kChat) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
        "<|im_start|>assistant\nHi.<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(render_chat(ChatFamily::llama3, kChat) ==
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHi.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nAgain<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render_chat(ChatFamily::mistral, kChat) ==
        "[INST] Be brief.\n\nHello [/INST]Hi.</s>[INST] Again [/INST]");
  CHECK(render_chat(ChatFamily::phi3, kChat) ==
        "<|system|>\nBe brief.<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi.<|end|>\n"
        "<|user|>\nAgain<|end|>\n<|assistant|>\n");
  CHECK(render_chat(ChatFamily::gemma, kChat) ==
        "<start_of_turn>user\nBe brief.\n\nHello<end_of_turn>\n<start_of_turn>model\nHi."
        "<end_of_turn>\n<start_of_turn>user\nAgain<end_of_turn>\n<start_of_turn>model\n");
}

TEST_CASE("a system message alone still reaches families without a system role") {
  std::vector<ChatMessage> only_system = {{"system", "Rules."}};
  CHECK(render_chat(ChatFamily::gemma, only_system) ==
        "<start_of_turn>user\nRules.<end_of_turn>\n<start_of_turn>model\n");
}

TEST_CASE("qwen3.5: recognised, and rendered as its template renders (tools, calls, thinking)") {
  // qwen35_chat/qwen35_chat_reference.json: Qwen3.5's template rendered by Jinja2 as
  // transformers sets it up (make_qwen35_chat_reference.py).
  std::ifstream in(std::string(SPECD_SOURCE_DIR) +
                   "/tests/server/qwen35_chat/qwen35_chat_reference.json");
  REQUIRE(in.good());
  const nlohmann::ordered_json ref = nlohmann::ordered_json::parse(in);
  CHECK(detect_chat_family("{{- '<|im_start|>system\\n' }}<tool_call>\\n<function=...>"
                           "{{- '<think>\\n' }}") == ChatFamily::qwen35);
  CHECK(chat_family_by_name("qwen3.5") == ChatFamily::qwen35);
  int cases = 0;
  for (const auto& c : ref["cases"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) {
      ChatMessage msg{m["role"].get<std::string>(), m["content"].get<std::string>()};
      if (m.contains("tool_calls"))
        for (const auto& call : m["tool_calls"])
          msg.tool_calls.push_back({"", call["function"]["name"].get<std::string>(),
                                    call["function"]["arguments"].dump()});
      messages.push_back(msg);
    }
    std::vector<ToolFunction> tools;
    if (c.contains("tools"))
      for (const auto& t : c["tools"])
        tools.push_back({t["function"]["name"].get<std::string>(),
                         t["function"]["description"].get<std::string>(),
                         t["function"]["parameters"].dump()});
    CAPTURE(cases);
    CHECK(render_chat(ChatFamily::qwen35, messages, tools) == c["rendered"].get<std::string>());
    ++cases;
  }
  CHECK(cases == 6);
  // The template's refusals: no user query; a system message after the first.
  CHECK_THROWS(render_chat(ChatFamily::qwen35, {{"system", "x"}}));
  CHECK_THROWS(render_chat(ChatFamily::qwen35, {{"user", "a"}, {"system", "b"}}));
}
