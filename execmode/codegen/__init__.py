"""Kernel generation (placeholder until the kernels land): fused nodes run op by op."""


def kernel_factory_for(graph, graph_id, backend=None):
    return None
