"""pickfs: which storage setup should my database stand on?"""

__version__ = "0.1.0"
