import Foundation
import VoxCore
import VoxFieldService
import VoxHTTP

/// An agent on an OpenAI-compatible chat model (`POST {baseURL}/chat/completions`): one
/// function per record type (`save_<type>`, its JSON Schema as parameters) offered as `tools`;
/// every call the model makes — several at once included — is checked against its schema and
/// answered with a `tool` message (saved with its record id, or rejected with the JSON path), and
/// the model then speaks its response. With `responseFormat: json_schema` the response itself is
/// structured output (`{"agent", "response"}`), strict. The session's messages are its memory.
public struct OpenAIAgent: AgentProvider, ProviderKind {
    public static let name = "openai"
    public static let summary =
        "POST {baseURL}/chat/completions with tools (a save_<type> function per record schema) and the session so far."
    public static func make(_ settings: Settings, context: StageContext) throws -> any AgentProvider {
        try OpenAIAgent(settings: settings, context: context)
    }

    public struct Settings: Sendable {
        public var http: HTTPSettings
        public var model: String
        public var systemPrompt: String?
        public var memory: Int
        public var temperature: Double?
        public var seed: Int?
        public var strict: Bool
        public var structuredResponse: Bool
        public var maxRounds: Int
    }

    /// Each option of its own, declared once (the connection's are `HTTPSettings.Option`).
    public enum Option {
        public static let model = StageOption<String>("model", .string, default: "gpt-4o-mini", help: "Chat model.")
        public static let systemPrompt = StageOption<String?>(
            "systemPrompt", .string, help: "The system prompt, inline (a field-service default otherwise).")
        public static let memory = StageOption<Int>(
            "memory", .integer(0...200), default: 20, help: "Earlier turns of the same session sent as history.")
        public static let temperature = StageOption<Double>(
            "temperature", .number(0...2), default: 0, help: "Sampling temperature.")
        public static let seed = StageOption<Int?>(
            "seed", .integer(0...Int(Int32.max)), help: "Seed, for servers that sample reproducibly.")
        public static let strict = StageOption<Bool>(
            "strict", .boolean, default: false,
            help:
                "Send tools with \"strict\": true (the server then keeps to the schema; OpenAI needs every "
                + "property "
                + "required).")
        public static let responseFormat = StageOption<ResponseFormat>(
            "responseFormat", default: .text,
            help: "json_schema: the spoken response as strict structured output {agent, response}.")
        public static let maxRounds = StageOption<Int>(
            "maxRounds", .integer(1...8), default: 3,
            help: "Model calls per turn at most (tool results go back to the model until it answers).")
    }

    /// How the model's spoken response comes back.
    public enum ResponseFormat: String, Sendable, CaseIterable, OptionValue {
        case text
        case jsonSchema = "json_schema"
    }

    public static let options: [OptionSpec] =
        HTTPSettings.options + [
            Option.model.spec, Option.systemPrompt.spec, Option.memory.spec, Option.temperature.spec, Option.seed.spec,
            Option.strict.spec, Option.responseFormat.spec, Option.maxRounds.spec,
        ]

    public static func settings(_ options: StageOptions) throws -> Settings {
        Settings(
            http: HTTPSettings(options), model: options[Option.model], systemPrompt: options[Option.systemPrompt],
            memory: options[Option.memory], temperature: options[Option.temperature], seed: options[Option.seed],
            strict: options[Option.strict], structuredResponse: options[Option.responseFormat] == .jsonSchema,
            maxRounds: options[Option.maxRounds])
    }

    public static func provenance(_ settings: Settings) -> [String: JSONValue] { ["model": .string(settings.model)] }

    let settings: Settings
    let connection: OpenAIConnection

    public init(settings: Settings, context: StageContext) throws {
        self.settings = settings
        connection = try OpenAIConnection(settings: settings.http, context: context)
    }

    public func prepare() async throws { try await connection.prepare(provider: "openai agent") }

    func systemPrompt(_ session: AgentSession, fixed: AgentName?) -> String {
        if let prompt = settings.systemPrompt { return prompt }
        let date = session.referenceDate.flatMap { c in
            c.year.map { String(format: "%04d-%02d-%02d", $0, c.month ?? 1, c.day ?? 1) }
        }
        return [
            "You are the voice assistant of a field-service company, speaking with a technician or office worker.",
            fixed.map { "You are the \($0.rawValue) agent." }
                ?? "Route each request to contacts, jobs, estimates or scheduling.",
            "When you have what a record needs, save it by calling its function; otherwise ask for what is missing.",
            "Answer in one or two short sentences, spoken, in the caller's language (\(session.language)).",
            date.map { "Today is \($0); write dates as YYYY-MM-DD and times as HH:MM." } ?? "",
        ].filter { !$0.isEmpty }.joined(separator: " ")
    }

    func tools(_ catalog: RecordCatalog, fixed: AgentName?) -> [JSONValue] {
        catalog.types.filter { fixed == nil || fixed?.recordType == $0.name }.map { type in
            var function: [String: JSONValue] = [
                "name": .string(type.function), "description": .string(type.description),
                "parameters": Self.parameters(type.schema.root),
            ]
            if settings.strict { function["strict"] = true }
            return ["type": "function", "function": .object(function)]
        }
    }

    /// A record schema as function parameters: the same schema without its `$schema`/`$id`.
    static func parameters(_ schema: JSONValue) -> JSONValue {
        guard var object = schema.objectValue else { return schema }
        object["$schema"] = nil
        object["$id"] = nil
        return .object(object)
    }

    static let responseSchema: JSONValue = [
        "type": "json_schema",
        "json_schema": [
            "name": "agent_response", "strict": true,
            "schema": [
                "type": "object", "additionalProperties": false, "required": ["agent", "response"],
                "properties": [
                    "agent": ["type": "string", "enum": .array(AgentName.allCases.map { .string($0.rawValue) })],
                    "response": ["type": "string"],
                ],
            ],
        ],
    ]

    public func respond(
        to transcript: Transcript, session: inout AgentSession, fixed: AgentName?, tools: Toolbox
    )
        async throws -> AgentAnswer
    {
        var messages = Self.recent(session.messages, turns: settings.memory)
        messages.append(["role": "user", "content": .string(transcript.text)])
        var calls: [FunctionCall] = []
        var content: String?
        let offered = self.tools(tools.catalog, fixed: fixed)
        for _ in 0..<settings.maxRounds {
            var body: [String: JSONValue] = [
                "model": .string(settings.model),
                "messages": .array(
                    [["role": "system", "content": .string(systemPrompt(session, fixed: fixed))]] + messages),
                "temperature": .number(settings.temperature ?? 0),
            ]
            if !offered.isEmpty {
                body["tools"] = .array(offered)
                body["tool_choice"] = "auto"
            }
            if let seed = settings.seed { body["seed"] = .number(Double(seed)) }
            if settings.structuredResponse { body["response_format"] = Self.responseSchema }
            let message = try Self.message(try await connection.postJSON("chat/completions", .object(body)))
            let toolCalls = message["tool_calls"]?.arrayValue ?? []
            var assistant: [String: JSONValue] = ["role": "assistant", "content": message["content"] ?? .null]
            if !toolCalls.isEmpty { assistant["tool_calls"] = .array(toolCalls) }
            messages.append(.object(assistant))
            if toolCalls.isEmpty {
                content = message["content"]?.stringValue
                break
            }
            for (i, toolCall) in toolCalls.enumerated() {
                let function = toolCall.objectValue?["function"]?.objectValue
                let id = toolCall.objectValue?["id"]?.stringValue ?? "call_\(i)"
                let arguments = function?["arguments"]
                let call = tools.call(
                    name: function?["name"]?.stringValue ?? "", arguments: arguments?.objectValue.map(JSONValue.object),
                    raw: arguments?.stringValue, id: id, index: calls.count)
                calls.append(call)
                let result: JSONValue =
                    call.accepted
                    ? ["status": "saved", "recordId": .string(call.recordID)]
                    : [
                        "status": "rejected", "path": .string(call.rejection?.path ?? "$"),
                        "error": .string(call.rejection?.message ?? ""),
                    ]
                messages.append([
                    "role": "tool", "tool_call_id": .string(id),
                    "content": .string(String(decoding: result.canonicalData(), as: UTF8.self)),
                ])
            }
        }
        session.messages = messages
        var agent = fixed ?? calls.first(where: \.accepted).flatMap { $0.recordType.flatMap(AgentName.owning) }
        var response = (content ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        if settings.structuredResponse, let data = content.map({ Data($0.utf8) }),
            let object = (try? JSONValue.parse(data))?.objectValue
        {
            response = object["response"]?.stringValue ?? ""
            agent = agent ?? object["agent"]?.stringValue.flatMap(AgentName.init(rawValue:))
        }
        guard !response.isEmpty || !calls.isEmpty else {
            throw HTTPError(.invalidResponse, "the chat answer has neither content nor tool calls")
        }
        for call in calls where call.accepted { session.saved.append(call.recordType ?? call.name) }
        let routed = calls.first(where: \.accepted).map { "the model called \($0.name)" }
        return AgentAnswer(agent: agent ?? session.agent, response: response, calls: calls, routedBy: routed)
    }

    /// The messages of the last `turns` user turns (a turn's tool calls and results stay with it).
    static func recent(_ messages: [JSONValue], turns: Int) -> [JSONValue] {
        guard turns > 0 else { return [] }
        let starts = messages.indices.filter { messages[$0].objectValue?["role"]?.stringValue == "user" }
        guard starts.count > turns else { return messages }
        return Array(messages[starts[starts.count - turns]...])
    }

    /// `choices[0].message` of a chat-completions answer.
    static func message(_ response: HTTPResponse) throws -> [String: JSONValue] {
        guard let object = (try? JSONValue.parse(response.body))?.objectValue else {
            let start = String(decoding: response.body.prefix(80), as: UTF8.self)
            throw HTTPError(
                .invalidResponse, "the server's answer is not a JSON object: \(start.isEmpty ? "(empty)" : start)")
        }
        guard let message = object["choices"]?.arrayValue?.first?.objectValue?["message"]?.objectValue else {
            throw HTTPError(.invalidResponse, "the chat answer has no choices[0].message")
        }
        return message
    }
}
