"""kernelbench_check.py — static checks of a KernelBench-format answer (a `class ModelNew`
whose forward calls code built by `load_inline`), done by parsing it with Python's `ast`.
Trusted code: it never imports or runs the answer. Each finding names a rule of
docs/kernelbench.md. Used as a module (check_answer) or a command (JSON on stdout)."""

import ast
import json
import re
import sys

MAX_SOURCE_BYTES = 256 * 1024

# Modules an answer may import, and what each may be bound as.
ALLOWED_IMPORTS = {
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.utils.cpp_extension",
    "math",
    "typing",
    "__future__",
}
ALLOWED_FROM = {
    "torch": {"nn", "Tensor"},
    "torch.nn": {"functional", "Module", "Parameter"},
    "torch.utils.cpp_extension": {"load_inline"},
    "math": None,
    "typing": None,
    "__future__": None,
}
THREAD_MODULES = {
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "torch.multiprocessing",
}
TIMING_MODULES = {"time", "timeit"}

# Torch calls that only allocate or describe: allowed on the hot path.
TORCH_PLUMBING = {
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "Size",
    "device",
    "finfo",
    "iinfo",
    "is_tensor",
    "numel",
    "no_grad",
    "inference_mode",
    "get_default_dtype",
    "cuda.current_device",
    "cuda.is_available",
    "cuda.synchronize",
    "cuda.device_count",
    "cuda.get_device_name",
    "cuda.current_stream",
    "cuda.default_stream",
}
# Tensors a PyTorch module holds; its other attributes (stride, padding, eps…) are numbers.
MODULE_TENSORS = {
    "weight",
    "bias",
    "running_mean",
    "running_var",
    "num_batches_tracked",
    "in_proj_weight",
    "in_proj_bias",
    "weight_ih_l0",
    "weight_hh_l0",
    "bias_ih_l0",
    "bias_hh_l0",
}
# The heavy operations a task is usually about: left to PyTorch they make a "fused" answer a wrapper.
HEAVY_OPS = {
    "matmul",
    "mm",
    "bmm",
    "addmm",
    "addbmm",
    "baddbmm",
    "addmv",
    "mv",
    "einsum",
    "tensordot",
    "chain_matmul",
    "linear",
    "bilinear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "convolution",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "lstm",
    "gru",
    "rnn_tanh",
    "rnn_relu",
    "cdist",
    "inner",
    "outer",
    "dot",
    "vdot",
    "kron",
}
HEAVY_MODULES = {
    "Linear",
    "Bilinear",
    "LazyLinear",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "LSTM",
    "GRU",
    "RNN",
    "LSTMCell",
    "GRUCell",
    "RNNCell",
    "MultiheadAttention",
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
}
HEAVY_NAMESPACES = ("torch.linalg.", "torch.fft.", "torch.special.")
# Methods of tensors (and of Python lists/strings) that move, view or describe data.
PLUMBING_METHODS = {
    "size",
    "dim",
    "ndimension",
    "numel",
    "nelement",
    "stride",
    "is_contiguous",
    "contiguous",
    "view",
    "reshape",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "t",
    "expand",
    "expand_as",
    "view_as",
    "reshape_as",
    "data_ptr",
    "element_size",
    "storage_offset",
    "get_device",
    "to",
    "cuda",
    "cpu",
    "float",
    "new_empty",
    "new_zeros",
    "narrow",
    "select",
    "chunk",
    "split",
    "unbind",
    "detach",
    "requires_grad_",
    "item",
    "tolist",
    "zero_",
    "fill_",
    "is_floating_point",
    "append",
    "extend",
    "insert",
    "pop",
    "index",
    "count",
    "keys",
    "values",
    "items",
    "get",
    "format",
    "join",
    "startswith",
    "endswith",
    "strip",
    "replace",
}
LOWER_PRECISION = {
    "float16",
    "half",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "HalfTensor",
    "BFloat16Tensor",
    "autocast",
    "cuda.amp",
    "amp",
    "set_float32_matmul_precision",
}
STREAM_APIS = {
    "cuda.Stream",
    "cuda.stream",
    "cuda.set_stream",
    "cuda.ExternalStream",
    "cuda.graph",
    "cuda.CUDAGraph",
    "cuda.graphs",
    "cuda.StreamContext",
    "cuda.Event",
}
# Torch names that are values, not operations: fine to pass around on the hot path.
TORCH_CONSTANTS = {
    "float32",
    "float",
    "float64",
    "double",
    "int32",
    "int",
    "int64",
    "long",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "strided",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
    "Tensor",
    "Size",
    "device",
    "dtype",
}
# Calls that change what a stored object holds: on the hot path they keep state across calls.
MUTATORS = {
    "append",
    "extend",
    "insert",
    "pop",
    "update",
    "setdefault",
    "clear",
    "remove",
    "add",
    "discard",
    "popitem",
    "copy_",
    "fill_",
    "zero_",
    "put_",
    "index_put_",
    "scatter_",
    "__setitem__",
}
SAFE_BUILTINS_EXTRA = {
    "print",
    "isinstance",
    "tuple",
    "list",
    "dict",
    "zip",
    "enumerate",
    "super",
    "reversed",
    "sorted",
    "any",
    "all",
    "hasattr",
    "id",
    "repr",
    "set",
    "map",
    "filter",
}
COMPILERS = ("compile", "jit", "_dynamo", "_inductor", "fx", "export", "onnx")
INTERNALS = (
    "ops",
    "_C",
    "library",
    "classes",
    "_ops",
    "_refs",
    "_prims",
    "_decomp",
    "hub",
    "profiler",
    "overrides",
)
# Builtins that reach outside the answer or rewrite it.
DYNAMIC_BUILTINS = {
    "exec",
    "eval",
    "compile",
    "__import__",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "vars",
    "breakpoint",
    "memoryview",
    "type",
    "object",
    "__builtins__",
    "__loader__",
    "__spec__",
}
IO_BUILTINS = {"open", "input"}
# Names that reach the interpreter, its frames or the process from wherever they hang (torch.sys,
# torch.os, a frame's f_locals...): the runner's protocol, clocks and checks live in the same
# interpreter as the answer, so no path to them is allowed however it is spelled.
INTROSPECTION_MODULES = {
    "sys",
    "os",
    "gc",
    "inspect",
    "builtins",
    "importlib",
    "ctypes",
    "subprocess",
    "traceback",
    "linecache",
    "threading",
    "_thread",
    "multiprocessing",
    "marshal",
    "pickle",
    "io",
    "pathlib",
    "shutil",
    "socket",
    "weakref",
}
INTROSPECTION_ATTRS = {
    "_getframe",
    "f_locals",
    "f_globals",
    "f_back",
    "f_code",
    "f_builtins",
    "f_trace",
    "gi_frame",
    "gi_code",
    "cr_frame",
    "cr_code",
    "ag_frame",
    "tb_frame",
    "tb_next",
    "co_code",
    "co_consts",
    "settrace",
    "setprofile",
    "addaudithook",
    "get_objects",
    "get_referrers",
    "get_referents",
    "exc_info",
    "_current_frames",
}
# Private torch helpers honest answers use (argument normalisation); any other private name of
# torch's is its internals.
TORCH_PRIVATE_ALLOWED = {"_pair", "_single", "_triple", "_quadruple", "_ntuple"}
ALLOWED_DUNDERS = {"__init__", "__name__"}
SCALAR_BUILTINS = {
    "len",
    "int",
    "float",
    "bool",
    "min",
    "max",
    "abs",
    "round",
    "sum",
    "range",
    "divmod",
    "str",
}
SAFE_BUILTINS = SCALAR_BUILTINS | SAFE_BUILTINS_EXTRA
# Builtins that compute with their arguments' operators (sum(x) adds rows, abs(x) is x.abs()).
COMPUTING_BUILTINS = {
    "sum",
    "abs",
    "min",
    "max",
    "round",
    "divmod",
    "sorted",
    "reversed",
    "map",
    "filter",
    "any",
    "all",
}
# Arguments of load_inline that would change how kevin builds the extension.
BUILD_OPTIONS_REFUSED = {"extra_ldflags", "extra_include_paths", "build_directory", "is_standalone"}
# Text in the C++/CUDA sources that starts work kevin's clock would not see (the build's gates
# judge the sources again; this only names the rule early).
SOURCE_MARKERS = {
    "cudaStreamCreate": "stream_injection",
    "getStreamFromPool": "stream_injection",
    "cudaStreamPerThread": "stream_injection",
    "cudaLaunchHostFunc": "stream_injection",
    "cudaGraphLaunch": "stream_injection",
    "std::thread": "threads",
    "pthread_create": "threads",
    "std::async": "threads",
    "at::matmul": "pytorch_compute",
    "torch::matmul": "pytorch_compute",
    "at::mm": "pytorch_compute",
    "torch::mm": "pytorch_compute",
    "at::conv": "pytorch_compute",
    "torch::conv": "pytorch_compute",
    "torch::nn::": "pytorch_compute",
    "at::native": "pytorch_compute",
    "at::linear": "pytorch_compute",
    "torch::linear": "pytorch_compute",
    ".matmul(": "pytorch_compute",
    ".mm(": "pytorch_compute",
    ".bmm(": "pytorch_compute",
    "at::bmm": "pytorch_compute",
    "cublas": "library_not_allowed",
    "cudnn": "library_not_allowed",
}


# The verdict's reason is the first finding in this order: the most specific rule first.
RULE_ORDER = [
    "syntax_error",
    "source_too_large",
    "source_too_complex",
    "inherits_reference",
    "missing_model_new",
    "calls_reference",
    "timing_patch",
    "stream_injection",
    "threads",
    "lazy_evaluation",
    "try_except_fallback",
    "precision_downgrade",
    "torch_compile",
    "torch_internals",
    "io_not_allowed",
    "dynamic_code",
    "import_not_allowed",
    "library_not_allowed",
    "introspection",
    "build_option_not_allowed",
    "monkeypatch",
    "global_state",
    "state_across_calls",
    "output_buffer_reuse",
    "partial_fusion",
    "pytorch_compute",
    "no_custom_kernel",
    "build_arguments_not_static",
]
# An extension's name becomes its module's name (PyInit_<name>) and a C macro.
EXTENSION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


class Finding:
    def __init__(self, rule, line, detail):
        self.rule, self.line, self.detail = rule, line, detail

    def as_json(self):
        return {"rule": self.rule, "line": self.line, "detail": self.detail}


class Answer:
    """What the checks need to know of the answer's module: aliases of imported names, the
    extensions load_inline built, module-level names, and ModelNew."""

    def __init__(self, tree):
        self.tree = tree
        self.aliases = {}  # local name -> dotted canonical name ("F" -> "torch.nn.functional")
        self.extensions = set()  # module-level names bound to load_inline(...)
        self.kernel_functions = set()  # module-level names bound to an extension's function
        self.module_names = set()  # every name bound at module level
        self.module_scalars = set()  # module-level names bound to numbers
        self.model_new = None
        self.model_new_bindings = 0
        for node in tree.body:
            names = bound_names(node)
            self.module_names.update(names)
            self.model_new_bindings += names.count("ModelNew")
            if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
                self.model_new = node
            if isinstance(node, ast.Assign) and is_number_expr(node.value, set()):
                self.module_scalars.update(names)

    def canonical(self, node):
        """The dotted name an expression denotes, with import aliases resolved; None when it is
        not a plain name or attribute chain."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id, node.id)
        return ".".join([root] + list(reversed(parts)))

    def is_load_inline(self, call):
        return (
            isinstance(call, ast.Call)
            and self.canonical(call.func) == "torch.utils.cpp_extension.load_inline"
        )


def is_number_expr(node, names):
    """A number computed from constants and the given names only."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, bool)) or node.value is None
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_number_expr(e, names) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return is_number_expr(node.left, names) and is_number_expr(node.right, names)
    if isinstance(node, ast.UnaryOp):
        return is_number_expr(node.operand, names)
    if isinstance(node, ast.IfExp):
        return is_number_expr(node.body, names) and is_number_expr(node.orelse, names)
    if isinstance(node, ast.Subscript):
        return is_number_expr(node.value, names)
    if isinstance(node, (ast.Compare, ast.BoolOp)):
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in SCALAR_BUILTINS | {"tuple", "list", "isinstance"}
    ):
        return all(is_number_expr(a, names) or isinstance(a, ast.Name) for a in node.args)
    return False


def bound_names(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names = []
    for t in targets:
        names.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


class Checker:
    def __init__(self, source):
        self.source = source
        self.findings = []
        self.answer = None

    def flag(self, rule, node, detail):
        line = getattr(node, "lineno", 0) if node is not None else 0
        self.findings.append(Finding(rule, line, detail))

    def run(self):
        if len(self.source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
            self.flag("source_too_large", None, "the answer is over %d bytes" % MAX_SOURCE_BYTES)
            return self.findings
        try:
            tree = ast.parse(self.source)
        except (SyntaxError, ValueError) as e:
            self.flag("syntax_error", None, str(e))
            return self.findings
        self.answer = Answer(tree)
        self.check_imports()
        self.bind_module_aliases()
        self.check_everywhere()
        self.check_model_new()
        return self.findings

    def bind_module_aliases(self):
        """Module-level names bound to torch functions or to extensions count as those (so
        `mm = torch.matmul` is torch.matmul and `kernels = ext` an extension)."""
        for node in self.answer.tree.body:
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                continue
            target, value = node.targets[0].id, node.value
            if self.answer.is_load_inline(value) or (
                isinstance(value, ast.Name) and value.id in self.answer.extensions
            ):
                self.answer.extensions.add(target)
            elif (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id in self.answer.extensions
            ):
                self.answer.kernel_functions.add(target)
            elif (self.answer.canonical(value) or "").startswith("torch."):
                self.answer.aliases[target] = self.answer.canonical(value)

    # Imports: only torch's own modules, math and typing; threads and clocks named as such.
    def check_imports(self):
        for node in ast.walk(self.answer.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.check_module(node, alias.name)
                    if alias.name in ALLOWED_IMPORTS:
                        local = alias.asname or alias.name.split(".")[0]
                        self.answer.aliases[local] = (
                            alias.name if alias.asname else alias.name.split(".")[0]
                        )
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    self.flag("import_not_allowed", node, "relative import")
                    continue
                if not self.check_module(node, module):
                    continue
                allowed = ALLOWED_FROM.get(module, set())
                for alias in node.names:
                    if allowed is not None and alias.name not in allowed:
                        self.flag_module(node, module + "." + alias.name)
                        continue
                    self.answer.aliases[alias.asname or alias.name] = module + "." + alias.name

    def check_module(self, node, module):
        if module in ALLOWED_IMPORTS:
            return True
        self.flag_module(node, module)
        return False

    def flag_module(self, node, module):
        root = module.split(".")[0]
        if root in THREAD_MODULES or module in THREAD_MODULES:
            self.flag("threads", node, "imports " + module)
        elif root in TIMING_MODULES:
            self.flag("timing_patch", node, "imports " + module)
        else:
            self.flag("import_not_allowed", node, "imports " + module)

    # Rules that hold wherever the code is: module level, __init__ or the hot path.
    def check_everywhere(self):
        self.inner = {
            id(n.value) for n in ast.walk(self.answer.tree) if isinstance(n, ast.Attribute)
        }
        self.model_bases = {
            id(b)
            for n in ast.walk(self.answer.tree)
            if isinstance(n, ast.ClassDef)
            for b in n.bases
        }
        if self.answer.model_new_bindings > 1:
            self.flag("monkeypatch", self.answer.model_new, "ModelNew is bound more than once")
        for node in ast.walk(self.answer.tree):
            if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                self.flag(
                    "try_except_fallback",
                    node,
                    "try/except: a failing kernel must fail, not fall back",
                )
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                self.check_assignment(node)
            elif isinstance(node, ast.Attribute):
                self.check_attribute(node)
            elif isinstance(node, ast.Name):
                self.check_name(node)
            elif isinstance(node, ast.ClassDef):
                self.check_class(node)
            elif isinstance(
                node, (ast.Yield, ast.YieldFrom, ast.Await, ast.AsyncFunctionDef, ast.Lambda)
            ):
                self.flag(
                    "lazy_evaluation",
                    node,
                    type(node).__name__.lower() + ": work deferred past the call",
                )
            elif isinstance(node, ast.Global):
                self.flag("state_across_calls", node, "global statement")
            elif isinstance(node, ast.Call) and self.answer.is_load_inline(node):
                self.check_load_inline(node)

    def check_assignment(self, node):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            for t in ast.walk(target):
                if not isinstance(t, ast.Attribute) or not isinstance(t.ctx, (ast.Store, ast.Del)):
                    continue
                name = self.answer.canonical(t)
                if name is None:
                    continue
                root = name.split(".")[0]
                if root == "torch" and (
                    "allow_tf32" in name or "allow_fp16" in name or "allow_bf16" in name
                ):
                    self.flag("precision_downgrade", node, "sets " + name)
                elif root == "torch" and ".backends." in "." + name + ".":
                    self.flag("global_state", node, "sets " + name)
                elif root in ("torch", "math", "typing") or root in ("Model", "ModelNew"):
                    self.flag("monkeypatch", node, "assigns " + name)
                elif root in self.answer.module_names:
                    self.flag("monkeypatch", node, "assigns " + name)

    def check_attribute(self, node):
        if node.attr in INTROSPECTION_MODULES or node.attr in INTROSPECTION_ATTRS:
            self.flag("introspection", node, "reaches ." + node.attr)
            return
        if (
            node.attr.startswith("__")
            and node.attr.endswith("__")
            and node.attr not in ALLOWED_DUNDERS
        ):
            self.flag("dynamic_code", node, "reaches " + node.attr)
            return
        if id(node) in self.inner:
            return  # the whole chain is judged once, at its outermost attribute
        name = self.answer.canonical(node)
        if name is None or not name.startswith("torch."):
            if node.attr in ("half", "bfloat16"):
                self.flag("precision_downgrade", node, "." + node.attr + "()")
            return
        self.check_torch_name(node, name)

    def check_torch_name(self, node, name):
        rest = name[len("torch.") :]
        if rest in STREAM_APIS or any(rest.startswith(s + ".") for s in STREAM_APIS):
            rule = "timing_patch" if rest.startswith("cuda.Event") else "stream_injection"
            self.flag(rule, node, "uses torch." + rest)
        elif rest in LOWER_PRECISION or any(rest.startswith(p + ".") for p in LOWER_PRECISION):
            self.flag("precision_downgrade", node, "uses torch." + rest)
        elif rest.split(".")[0] in COMPILERS:
            self.flag("torch_compile", node, "uses torch." + rest)
        elif (
            rest.split(".")[0] in INTERNALS
            or rest == "utils.cpp_extension.load"
            or rest.startswith("autograd.profiler")
            or any(p.startswith("_") and p not in TORCH_PRIVATE_ALLOWED for p in rest.split("."))
        ):
            self.flag("torch_internals", node, "uses torch." + rest)
        elif (
            rest.startswith("set_")
            or rest in ("manual_seed", "seed", "use_deterministic_algorithms")
            or rest.startswith("cuda.set_")
            or rest.startswith("cuda.manual_seed")
            or rest.startswith("random.")
        ):
            self.flag("global_state", node, "calls torch." + rest)
        elif rest.startswith("multiprocessing"):
            self.flag("threads", node, "uses torch." + rest)

    def check_name(self, node):
        if (
            node.id in INTROSPECTION_MODULES | INTROSPECTION_ATTRS
            and node.id not in self.answer.module_names
        ):
            self.flag("introspection", node, "uses " + node.id)
        elif node.id in DYNAMIC_BUILTINS and node.id not in self.answer.module_names:
            self.flag("dynamic_code", node, "uses " + node.id)
        elif node.id in IO_BUILTINS and node.id not in self.answer.module_names:
            self.flag("io_not_allowed", node, "uses " + node.id)
        elif (
            node.id == "Model"
            and isinstance(node.ctx, ast.Load)
            and id(node) not in self.model_bases
        ):
            self.flag("calls_reference", node, "refers to the reference Model")
        elif (
            node.id in ("time", "timeit", "perf_counter")
            and node.id not in self.answer.module_names
        ):
            self.flag("timing_patch", node, "uses " + node.id)

    def check_class(self, node):
        for base in node.bases:
            name = self.answer.canonical(base)
            if name == "Model" or (name or "").endswith(".Model"):
                self.flag(
                    "inherits_reference",
                    node,
                    "class %s derives from the reference Model" % node.name,
                )
            elif name == "torch.Tensor" or (name or "").endswith("Tensor"):
                self.flag("lazy_evaluation", node, "class %s subclasses a tensor type" % node.name)
            elif node.name == "ModelNew" and name not in ("torch.nn.Module",):
                self.flag("inherits_reference", node, "ModelNew must derive from nn.Module only")
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in (
                "__torch_function__",
                "__torch_dispatch__",
            ):
                self.flag("lazy_evaluation", item, item.name)
        if node.name == "ModelNew" and not node.bases:
            self.flag("inherits_reference", node, "ModelNew must derive from nn.Module")

    def check_load_inline(self, call):
        for kw in call.keywords:
            if kw.arg is None:
                self.flag("build_option_not_allowed", call, "**kwargs to load_inline")
            elif kw.arg in BUILD_OPTIONS_REFUSED and not is_empty_literal(kw.value):
                self.flag("build_option_not_allowed", call, "load_inline(%s=...)" % kw.arg)
        for text in self.source_strings(call):
            for marker, rule in SOURCE_MARKERS.items():
                if marker in text:
                    self.flag(rule, call, "the C++/CUDA source uses " + marker)

    def source_strings(self, call):
        """The string constants that reach load_inline's source arguments (directly, through
        module-level names, lists or concatenations)."""
        values = [
            kw.value for kw in call.keywords if kw.arg in ("cpp_sources", "cuda_sources")
        ] + call.args[1:3]
        seen, texts = set(), []
        while values:
            v = values.pop()
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                texts.append(v.value)
            elif isinstance(v, ast.Name) and v.id not in seen:
                seen.add(v.id)
                values.extend(module_values(self.answer.tree, v.id))
            elif isinstance(v, (ast.List, ast.Tuple)):
                values.extend(v.elts)
            elif isinstance(v, ast.BinOp):
                values.extend([v.left, v.right])
            elif isinstance(v, ast.JoinedStr):
                values.extend(v.values)
            elif isinstance(v, ast.FormattedValue):
                values.append(v.value)
        return texts

    # ModelNew: its hot path (every method but __init__, and the answer's functions).
    def check_model_new(self):
        model = self.answer.model_new
        if model is None:
            self.flag("missing_model_new", None, "no top-level class ModelNew")
            return
        methods = {f.name: f for f in model.body if isinstance(f, ast.FunctionDef)}
        if "forward" not in methods:
            self.flag("missing_model_new", model, "ModelNew has no forward")
            return
        init = methods.get("__init__")
        members = Members(self.answer, model, init)
        members.extensions |= self.answer.extensions
        uses_kernel = False
        hot = [f for name, f in methods.items() if name != "__init__"]
        hot += [n for n in self.answer.tree.body if isinstance(n, ast.FunctionDef)]
        for cls in self.answer.tree.body:
            if isinstance(cls, ast.ClassDef) and cls is not model:
                hot += [
                    f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"
                ]
        # A function or class defined inside a constructor can be called on every forward
        # (self.helper.contiguous(x)): what it does is judged, never what it is named.
        for ctor in [init] + [
            f
            for c in self.answer.tree.body
            if isinstance(c, ast.ClassDef) and c is not model
            for f in c.body
            if isinstance(f, ast.FunctionDef) and f.name == "__init__"
        ]:
            if ctor is not None:
                hot += [
                    n for n in ast.walk(ctor) if isinstance(n, ast.FunctionDef) and n is not ctor
                ]
        for fn in hot:
            uses_kernel |= HotPath(self, members, fn, fn in model.body).check()
        if not self.answer.extensions and not members.extension_attrs:
            self.flag("no_custom_kernel", model, "nothing is built with load_inline")
        elif not uses_kernel:
            self.flag(
                "no_custom_kernel",
                methods["forward"],
                "forward never calls the load_inline extension",
            )


def is_empty_literal(node):
    return (
        isinstance(node, (ast.List, ast.Tuple))
        and all(isinstance(e, ast.Constant) and e.value in ("", None) for e in node.elts)
        or (isinstance(node, ast.Constant) and node.value in (None, "", False))
    )


def module_values(tree, name):
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            out.append(node.value)
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            out.append(node.value)
    return out


class Members:
    """What ModelNew.__init__ stores on self: PyTorch modules (by class), torch functions,
    load_inline extensions, and scalars (numbers made of the constructor's arguments)."""

    def __init__(self, answer, model, init):
        self.modules = {}  # attribute -> nn class name
        self.torch_functions = {}  # attribute -> torch function it holds ("torch.matmul")
        self.extension_attrs = set()
        self.kernel_attrs = set()  # attributes holding one function of an extension
        self.extensions = set()
        self.scalars = set()
        self.methods = {
            f.name for f in model.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        for node in model.body:  # class attributes are reached through self too
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.remember(answer, target.id, node.value, answer.module_scalars)
        if init is None:
            return
        params = {a.arg for a in init.args.args[1:]} | answer.module_scalars
        for node in ast.walk(init):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for attr in filter(None, (self_attribute(t) for t in targets)):
                self.remember(answer, attr, node.value, params)

    def remember(self, answer, attr, value, params):
        if answer.is_load_inline(value) or (
            isinstance(value, ast.Name) and value.id in answer.extensions
        ):
            self.extension_attrs.add(attr)
            return
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id in answer.extensions
        ):
            self.kernel_attrs.add(attr)
            return
        held = [h for h in (torch_function(answer, n) for n in ast.walk(value)) if h]
        is_call = isinstance(value, ast.Call)
        # A torch function kept as a value, or wrapped so that self.attr(x) calls it.
        if held and (
            not is_call or (answer.canonical(value.func) or "") in ("staticmethod", "classmethod")
        ):
            self.torch_functions[attr] = held[0]
            return
        last = (answer.canonical(value.func) or "").split(".")[-1] if is_call else ""
        if (
            is_call
            and (answer.canonical(value.func) or "").startswith("torch.nn.")
            and last[:1].isupper()
            and last != "Parameter"
        ):
            self.modules[attr] = last
        elif is_number_expr(value, params):
            self.scalars.add(attr)


def torch_function(answer, node):
    """The torch function a name or attribute denotes ("torch.nn.functional.relu"); None for
    anything else, torch's constants and dtypes, nn module classes and load_inline."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    name = answer.canonical(node) or ""
    last = name.split(".")[-1]
    if (
        not name.startswith("torch.")
        or last in TORCH_CONSTANTS
        or name == "torch.utils.cpp_extension.load_inline"
    ):
        return None
    if name.startswith("torch.nn.") and last[:1].isupper():
        return None
    return name


def self_attribute(node):
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def stored_root(node):
    """The name an attribute/subscript chain hangs from ("self" for self.cache[k])."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class HotPath:
    """One function that runs on every forward: no PyTorch compute, no state kept across
    calls, no stored tensor returned. Values are tensors unless shown to be scalars (sizes,
    shapes, numbers, the constructor's scalar arguments)."""

    def __init__(self, checker, members, fn, in_model_new):
        self.checker, self.answer, self.members, self.fn = checker, checker.answer, members, fn
        self.in_model_new = in_model_new
        self.scalars = set(self.answer.module_scalars)
        for a in fn.args.args + fn.args.kwonlyargs:
            if isinstance(a.annotation, ast.Name) and a.annotation.id in ("int", "float", "bool"):
                self.scalars.add(a.arg)
        defaults = fn.args.defaults
        for arg, default in zip(fn.args.args[len(fn.args.args) - len(defaults) :], defaults):
            if isinstance(default, ast.Constant) and not isinstance(default.value, str):
                self.scalars.add(arg.arg)
        self.local_extensions = set(members.extensions)
        self.local_torch = {}  # local name -> torch function it holds
        self.callees = set()
        self.kernel_calls = 0

    def check(self):
        self.callees = {id(n.func) for n in ast.walk(self.fn) if isinstance(n, ast.Call)}
        self.inner = {id(n.value) for n in ast.walk(self.fn) if isinstance(n, ast.Attribute)}
        for stmt in self.fn.body:
            self.visit(stmt)
        return self.kernel_calls > 0

    def visit(self, node):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assignment(node)
        elif isinstance(node, ast.For) and self.is_scalar(node.iter):
            self.scalars.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Return) and node.value is not None:
            self.returned(node.value)
        if isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.BinOp):
            self.arithmetic(node, node.left, node.right, node.op)
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            self.arithmetic(node, node.operand, node.operand, node.op)
        elif (
            isinstance(node, ast.Compare)
            and any(not self.is_scalar(v) for v in [node.left] + node.comparators)
            and not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
        ):
            self.checker.flag("pytorch_compute", node, "tensor comparison in " + self.fn.name)
        elif isinstance(node, ast.Nonlocal):
            self.checker.flag("state_across_calls", node, "nonlocal statement")
        elif (
            isinstance(node, (ast.Attribute, ast.Name))
            and id(node) not in self.callees
            and id(node) not in self.inner
        ):
            self.reference(node)
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def reference(self, node):
        """A torch function taken as a value (to be called elsewhere) is PyTorch computing."""
        name = self.answer.canonical(node) or ""
        if name.startswith("torch.") and isinstance(node.ctx, ast.Load):
            rest = name[len("torch.") :]
            last = rest.split(".")[-1]
            if (
                last not in TORCH_CONSTANTS
                and not last[:1].isupper()
                and rest not in TORCH_PLUMBING
                and not rest.startswith("cuda.")
                and last not in LOWER_PRECISION
            ):
                self.checker.flag(
                    "pytorch_compute",
                    node,
                    "torch.%s taken as a value in %s" % (rest, self.fn.name),
                )

    def assignment(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, (ast.Attribute, ast.Subscript)) and isinstance(
                    t.ctx, (ast.Store, ast.Del)
                ):
                    root = stored_root(t)
                    if root == "self" or root in self.answer.module_names:
                        self.checker.flag(
                            "state_across_calls", node, "%s stores into %s" % (self.fn.name, root)
                        )
        if isinstance(node, ast.AugAssign):
            self.arithmetic(node, node.target, node.value, node.op)
            return
        value = node.value
        if value is None:
            return
        for target in targets:
            names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
            self.scalars.difference_update(names)
            for n in names:
                self.local_extensions.discard(n)
                self.local_torch.pop(n, None)
            if self.is_scalar(value) or self.is_shape(value):
                self.scalars.update(names)
            elif (self.is_extension(value) or self.answer.is_load_inline(value)) and isinstance(
                target, ast.Name
            ):
                self.local_extensions.add(target.id)
            elif isinstance(target, ast.Name) and (self.answer.canonical(value) or "").startswith(
                "torch."
            ):
                self.local_torch[target.id] = self.answer.canonical(value)

    def is_extension(self, node):
        if isinstance(node, ast.Name):
            return node.id in self.local_extensions
        return self_attribute(node) in self.members.extension_attrs

    def is_shape(self, node):
        return (isinstance(node, ast.Attribute) and node.attr == "shape") or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "size"
        )

    def is_scalar(self, node):
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.scalars
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.is_scalar(e) for e in node.elts)
        if isinstance(node, ast.Subscript):
            return self.is_shape(node.value) or self.is_scalar(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in ("shape", "ndim", "dtype", "device", "is_cuda"):
                return True
            if self_attribute(node.value) in self.members.modules:
                return node.attr not in MODULE_TENSORS  # self.conv.stride, self.norm.eps
            return self_attribute(node) in self.members.scalars
        if isinstance(node, ast.Call):
            return self.returns_scalar(node)
        if isinstance(node, ast.BinOp):
            return self.is_scalar(node.left) and self.is_scalar(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_scalar(node.operand)
        if isinstance(node, (ast.BoolOp, ast.Compare)):
            return all(
                self.is_scalar(v) for v in ast.iter_child_nodes(node) if isinstance(v, ast.expr)
            )
        if isinstance(node, ast.IfExp):
            return self.is_scalar(node.body) and self.is_scalar(node.orelse)
        return False

    def returns_scalar(self, call):
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in (
            "size",
            "dim",
            "numel",
            "stride",
            "item",
            "data_ptr",
            "element_size",
            "nelement",
            "ndimension",
            "is_contiguous",
            "get_device",
            "storage_offset",
        ):
            return True
        if (self.answer.canonical(func) or "").startswith("math."):
            return True
        return (
            isinstance(func, ast.Name)
            and func.id in SCALAR_BUILTINS
            and all(self.is_scalar(a) for a in call.args)
        )

    def arithmetic(self, node, left, right, op):
        if isinstance(op, ast.MatMult):
            self.checker.flag(
                "partial_fusion", node, "@ (matrix product) left to PyTorch in " + self.fn.name
            )
        elif not (self.is_scalar(left) and self.is_scalar(right)):
            self.checker.flag("pytorch_compute", node, "tensor arithmetic in " + self.fn.name)

    def returned(self, value):
        attr = self_attribute(value)
        if attr is not None and attr not in self.members.scalars:
            self.checker.flag("output_buffer_reuse", value, "returns the stored self." + attr)
        elif (
            isinstance(value, ast.Name)
            and value.id in self.answer.module_names
            and value.id not in self.answer.module_scalars
        ):
            self.checker.flag("output_buffer_reuse", value, "returns the module-level " + value.id)

    def call(self, node):
        func = node.func
        if self.answer.is_load_inline(node):
            self.checker.flag("no_custom_kernel", node, "load_inline called on every forward")
            return
        if (isinstance(func, ast.Attribute) and self.is_extension(func.value)) or (
            self.in_model_new and self_attribute(func) in self.members.kernel_attrs
        ):
            self.kernel_calls += 1
            return
        if not isinstance(func, (ast.Name, ast.Attribute)):
            self.checker.flag("dynamic_code", node, "indirect call in " + self.fn.name)
            return
        name = self.answer.canonical(func) or ""
        attr = self_attribute(func)
        if isinstance(func, ast.Name) and func.id in self.local_torch:
            name = self.local_torch[func.id]
        elif attr in self.members.torch_functions:
            name = self.members.torch_functions[attr]
        if name.startswith("torch."):
            self.torch_call(node, name[len("torch.") :])
        elif attr in self.members.modules:
            self.module_call(node, attr)
        elif isinstance(func, ast.Name):
            self.named_call(node, func.id)
        else:
            self.attribute_call(node, func, name)

    def named_call(self, node, name):
        if name in self.answer.kernel_functions:
            self.kernel_calls += 1
            return
        if (
            name in COMPUTING_BUILTINS
            and name not in self.answer.module_names
            and not all(self.is_scalar(a) for a in node.args)
        ):
            self.checker.flag(
                "pytorch_compute", node, "%s() on a tensor in %s" % (name, self.fn.name)
            )
            return
        if (
            name in SAFE_BUILTINS
            or name in self.answer.module_names
            or name in DYNAMIC_BUILTINS | IO_BUILTINS
        ):
            return  # the answer's own functions are hot paths of their own; check_name reports the rest
        self.checker.flag("dynamic_code", node, "calls %s, which the answer does not define" % name)

    def attribute_call(self, node, func, name):
        inner = self_attribute(func.value)
        if inner in self.members.modules and func.attr in ("forward", "__call__"):
            self.module_call(node, inner)
        elif (
            isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            if func.attr != "__init__" and self.in_model_new:
                self.checker.flag("calls_reference", node, "super()." + func.attr)
        elif (
            self_attribute(func) is not None
            and self.in_model_new
            and func.attr not in self.members.methods
        ):
            self.checker.flag(
                "dynamic_code",
                node,
                "calls self.%s, which ModelNew does not define as a method" % func.attr,
            )
        elif self_attribute(func) is not None or name.startswith("math."):
            return  # a method of ModelNew itself (checked as a hot path of its own), or math
        elif func.attr in MUTATORS and (
            stored_root(func.value) == "self" or stored_root(func.value) in self.answer.module_names
        ):
            self.checker.flag(
                "state_across_calls",
                node,
                ".%s() on stored %s" % (func.attr, stored_root(func.value)),
            )
        else:
            self.method_call(node, func.attr)

    def torch_call(self, node, rest):
        last = rest.split(".")[-1]
        if rest in TORCH_PLUMBING:
            return
        if last in HEAVY_OPS or any(("torch." + rest).startswith(ns) for ns in HEAVY_NAMESPACES):
            self.checker.flag(
                "partial_fusion", node, "torch.%s left to PyTorch in %s" % (rest, self.fn.name)
            )
        elif rest.startswith("nn.") and last[:1].isupper():
            rule = "partial_fusion" if last in HEAVY_MODULES else "pytorch_compute"
            self.checker.flag(rule, node, "builds torch.%s in %s" % (rest, self.fn.name))
        else:
            self.checker.flag("pytorch_compute", node, "torch.%s in %s" % (rest, self.fn.name))

    def module_call(self, node, attr):
        cls = self.members.modules[attr]
        rule = "partial_fusion" if cls in HEAVY_MODULES else "pytorch_compute"
        self.checker.flag(rule, node, "self.%s (nn.%s) computes in PyTorch" % (attr, cls))

    def method_call(self, node, method):
        if method in HEAVY_OPS:
            self.checker.flag(
                "partial_fusion", node, ".%s() left to PyTorch in %s" % (method, self.fn.name)
            )
        elif method in ("half", "bfloat16"):
            return  # check_attribute reports it
        elif method not in PLUMBING_METHODS:
            self.checker.flag("pytorch_compute", node, ".%s() in %s" % (method, self.fn.name))


class Extensions:
    """The load_inline calls of an answer with their arguments known from the text alone
    (string constants, module-level names bound once, lists and `+` of those), so kevin can
    build them before any of the answer runs. A call whose arguments are computed is a
    finding (`build_arguments_not_static`), not an extension."""

    def __init__(self, answer, checker):
        self.answer, self.checker = answer, checker
        self.found = []

    def run(self):
        for node in ast.walk(self.answer.tree):
            if self.answer.is_load_inline(node):
                self.extract(node)
        names = [e["name"] for e in self.found]
        for e in self.found:
            if names.count(e["name"]) > 1:
                self.checker.flag(
                    "build_arguments_not_static",
                    None,
                    "two load_inline calls build '%s'" % e["name"],
                )
                break
        return self.found

    def argument(self, call, index, keyword):
        for kw in call.keywords:
            if kw.arg == keyword:
                return kw.value
        return call.args[index] if index < len(call.args) else None

    def extract(self, call):
        name = self.text(self.argument(call, 0, "name"))
        cpp = self.sources(self.argument(call, 1, "cpp_sources"))
        cuda = self.sources(self.argument(call, 2, "cuda_sources"))
        functions_node = self.argument(call, 3, "functions")
        functions = (
            []
            if functions_node is None or is_empty_literal(functions_node)
            else self.sources(functions_node)
        )
        if isinstance(functions_node, ast.Constant) and isinstance(functions_node.value, str):
            functions = [functions_node.value]
        missing = [
            what
            for what, value in (
                ("name", name),
                ("cpp_sources", cpp),
                ("cuda_sources", cuda),
                ("functions", functions),
            )
            if value is None
        ]
        if missing:
            self.checker.flag(
                "build_arguments_not_static",
                call,
                "load_inline's %s must be written in the answer as strings (or lists of strings, "
                "or names bound to them once at module level)" % ", ".join(missing),
            )
            return
        if not EXTENSION_NAME.match(name):
            self.checker.flag(
                "build_arguments_not_static", call, "extension name %r is not an identifier" % name
            )
            return
        bad = [f for f in functions if not EXTENSION_NAME.match(f)]
        if bad:
            self.checker.flag(
                "build_arguments_not_static", call, "function name %r is not an identifier" % bad[0]
            )
            return
        self.found.append(
            {
                "name": name,
                "cpp_sources": "\n".join(cpp),
                "cuda_sources": "\n".join(cuda),
                "functions": functions,
                "line": call.lineno,
            }
        )

    def text(self, node, depth=0):
        """The string `node` denotes, or None when the text alone does not say."""
        if depth > 32 or node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.text(node.left, depth + 1), self.text(node.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.Name):
            bound = self.bound_once(node.id)
            return self.text(bound, depth + 1) if bound is not None else None
        return None

    def sources(self, node, depth=0):
        """A list of strings for a source argument (None → []), or None when not static."""
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return []
        if depth > 32:
            return None
        if isinstance(node, ast.Name):
            bound = self.bound_once(node.id)
            if bound is not None and isinstance(bound, (ast.List, ast.Tuple)):
                return self.sources(bound, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.text(e, depth + 1) for e in node.elts]
            return None if any(i is None for i in items) else items
        single = self.text(node, depth + 1)
        return None if single is None else [single]

    def bound_once(self, name):
        values = module_values(self.answer.tree, name)
        rebound = sum(name in bound_names(n) for n in self.answer.tree.body)
        return values[0] if len(values) == 1 and rebound == 1 else None


def extract_extensions(source):
    """(findings, extensions) for one answer: every static finding of check_answer, plus
    build_arguments_not_static ones; each extension {"name", "cpp_sources", "cuda_sources",
    "functions", "line"} as load_inline would get it. Never raises for any input text."""
    checker = Checker(source)
    extensions = []
    try:
        checker.run()
        if checker.answer is not None:
            extensions = Extensions(checker.answer, checker).run()
    except RecursionError:
        checker.findings = [Finding("source_too_complex", 0, "nesting too deep to check")]
        extensions = []
    return unique_findings(checker.findings), extensions


def unique_findings(findings):
    seen, unique = set(), []
    for f in sorted(findings, key=lambda f: RULE_ORDER.index(f.rule)):
        key = (f.rule, f.line, f.detail)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def check_answer(source):
    """Findings for one answer, most specific first within the order the checks ran; [] when
    the answer passes every static rule. Never raises for any input text."""
    checker = Checker(source)
    try:
        findings = checker.run()
    except RecursionError:
        findings = [Finding("source_too_complex", 0, "nesting too deep to check")]
    return unique_findings(findings)


def main(argv):
    """kernelbench_check.py [--extract] ANSWER.py (- reads standard input): the findings as
    JSON; with --extract also the extensions kevin is to build."""
    extract = "--extract" in argv[1:]
    paths = [a for a in argv[1:] if a != "--extract"]
    if len(paths) != 1:
        print("usage: kernelbench_check.py [--extract] ANSWER.py", file=sys.stderr)
        return 2
    if paths[0] == "-":
        source = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    else:
        with open(paths[0], encoding="utf-8", errors="surrogateescape") as f:
            source = f.read()
    if not extract:
        print(json.dumps({"findings": [f.as_json() for f in check_answer(source)]}))
        return 0
    findings, extensions = extract_extensions(source)
    print(json.dumps({"findings": [f.as_json() for f in findings], "extensions": extensions}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
