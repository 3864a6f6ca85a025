"""Text that looks like markup everywhere a script can put text: prints, stderr, an input()
prompt, a scope's name, and an exception message. The TUI shows it as it is."""
import sys

import execmode as em

print("[/x] [bold]not bold[/bold] [/")
print("[red]stderr[/] [/", file=sys.stderr)
name = input("[/b] who? [bold]")
with em.named_scope("[s][bold]x[b]"):
    x = em.ones(3) * 2.0
    y = em.log(x - 5.0)          # NaN: a stop with this scope on screen
print("name", name, float(y.sum().item()))
raise ValueError("[/v] bad [bold]")
