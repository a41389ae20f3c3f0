"""deepspeed.runtime.zero.utils for dsrt: ZeRORuntimeException, the exception DeepSpeed's ZeRO raises for a
configuration it cannot run. dsrt's own ZeRO errors are DsrtError; this class exists so scripts that name it
(``except ZeRORuntimeException``) import."""


class ZeRORuntimeException(Exception):
    pass
